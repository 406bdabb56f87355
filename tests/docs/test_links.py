"""Every link and every path the manual names exists in the repository.

For README.md and each ``docs/**/*.md`` (plus the READMEs of ``traces/`` and
``deploy/MULTIHOST.md``, which the manual links to):

* a Markdown link to a relative target resolves to a file or folder inside the
  repository, and its ``#anchor`` (also a bare ``#anchor``) names a heading of
  the target;
* a backticked token that looks like a repository path (it starts with a top
  folder such as ``cli/`` or is a root file such as ``Makefile``) exists; a
  glob (``docs/*.md``) must match something, and ``:line``/``::test`` suffixes
  are ignored;
* nothing points outside the repository (``../`` that climbs out of it).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.docs.markdown import ROOT, anchors, doc_files, prose, rel

FILES = [*doc_files(), ROOT / "traces" / "README.md", ROOT / "deploy" / "MULTIHOST.md"]
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
TICKED = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
TOP = (
    "agent/",
    "cli/",
    "controller/",
    "slurmlite/",
    "tests/",
    "bench/",
    "deploy/",
    "docs/",
    "traces/",
)
ROOT_FILES = ("Makefile", "pyproject.toml", "README.md", ".gitignore")
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)  # http:, https:, mailto:


def inside(path: Path, root: Path = ROOT) -> bool:
    return path.resolve().is_relative_to(root)


def link_problems(doc: Path, root: Path = ROOT) -> list[str]:
    problems = []
    for number, line in prose(doc):
        for target in LINK.findall(line):
            if EXTERNAL.match(target):
                continue
            where = f"{rel(doc)}:{number}: link {target}"
            name, _, anchor = target.partition("#")
            path = (doc.parent / name) if name else doc
            if not inside(path, root):
                problems.append(f"{where} leaves the repository")
            elif not path.exists():
                problems.append(f"{where}: no such file")
            elif anchor and path.suffix == ".md" and anchor not in anchors(path):
                problems.append(f"{where}: no heading #{anchor} in {rel(path)}")
    return problems


def repo_path(token: str) -> str | None:
    """The repository path a backticked token names, or None when it names none."""
    token = token.strip().rstrip(".,;")
    if " " in token or "(" in token or "=" in token:
        return None  # a command line, a call or a setting: not a bare path
    token = re.split(r"::|:(?=\d)|#", token)[0]
    if token.startswith("../"):
        return token
    if token.startswith(TOP) or token in ROOT_FILES:
        return token
    return None


def path_problems(doc: Path, root: Path = ROOT) -> list[str]:
    problems = []
    for number, line in prose(doc):
        if "](" in line:  # link texts are checked as links
            line = LINK.sub("", line)
        for token in TICKED.findall(line):
            name = repo_path(token)
            if name is None:
                continue
            where = f"{rel(doc)}:{number}: `{token}`"
            base = doc.parent if name.startswith("../") else root
            if not inside(base / name, root):
                problems.append(f"{where} leaves the repository")
            elif any(c in name for c in "*?["):
                if not list(base.glob(name)):
                    problems.append(f"{where} matches no file")
            elif not (base / name).exists():
                problems.append(f"{where}: no such file or folder")
    return problems


@pytest.mark.parametrize("doc", FILES, ids=rel)
def test_every_link_resolves_inside_the_repository(doc: Path) -> None:
    assert not link_problems(doc), "\n".join(link_problems(doc))


@pytest.mark.parametrize("doc", FILES, ids=rel)
def test_every_path_named_in_backticks_exists(doc: Path) -> None:
    assert not path_problems(doc), "\n".join(path_problems(doc))


def test_the_checker_catches_what_it_should(tmp_path: Path) -> None:
    """A missing file, a missing anchor, a path outside and a stale backticked path."""
    (tmp_path / "cli").mkdir()
    (tmp_path / "cli" / "sbatch.py").write_text("")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "other.md").write_text("# Other\n\n## The `--wait` option\n")
    doc = tmp_path / "docs" / "guide.md"
    doc.write_text(
        "# Guide\n\n"
        "[ok](other.md#the---wait-option) [here](#guide) [web](https://example.org/x)\n"
        "[gone](nothing.md) [bad anchor](other.md#nope) [out](../../elsewhere.md)\n"
        "`cli/sbatch.py:12` `cli/srun.py` `sbatch --wait` `slurmlite.scheduler`\n"
        "```\n[not a link](nowhere.md) `cli/inside_a_fence.py`\n```\n"
    )
    assert link_problems(doc, tmp_path) == [
        f"{rel(doc)}:4: link nothing.md: no such file",
        f"{rel(doc)}:4: link other.md#nope: no heading #nope in {rel(tmp_path / 'docs/other.md')}",
        f"{rel(doc)}:4: link ../../elsewhere.md leaves the repository",
    ]
    assert path_problems(doc, tmp_path) == [f"{rel(doc)}:5: `cli/srun.py`: no such file or folder"]
    assert repo_path("tests/docs/test_links.py::test_x") == "tests/docs/test_links.py"


@pytest.mark.parametrize("doc", FILES, ids=rel)
def test_no_file_outside_the_repository_is_cited(doc: Path) -> None:
    """The design log and the shared folder beside a development checkout are not in a clone."""
    text = doc.read_text()
    cited = [w for w in ("DESIGN.md", "shared/golden", "shared/traces") if w in text]
    assert not cited, f"{rel(doc)} cites {cited}, which a clone does not have"
