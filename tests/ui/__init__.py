"""Dashboard tests in a real browser (tests/ui/conftest.py)."""
