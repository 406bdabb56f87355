# slurmlite: the two commands a new machine needs are `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
# test files run on this many pytest-xdist workers; WORKERS=0 runs them in one process
WORKERS ?= 4
XDIST  := $(if $(filter 0,$(WORKERS)),,-n $(WORKERS) --dist loadfile)

.PHONY: demo test bench lint clean screenshots

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]' --config-settings editable_mode=compat
	touch $(STAMP)

demo: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" bash deploy/demo.sh

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/pytest -q -p no:cacheprovider $(XDIST)

bench: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m bench.run

# the README's dashboard pictures: the browser test's screenshots, copied to docs/images
screenshots: $(STAMP)
	SLURMLITE_SCREENSHOTS_TO=docs/images SLURMLITE_REQUIRE_BROWSER=1 PATH="$(CURDIR)/$(BIN):$$PATH" \
	  $(BIN)/pytest -q -p no:cacheprovider tests/ui/test_screenshots.py

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

clean:
	rm -rf $(VENV) build *.egg-info
