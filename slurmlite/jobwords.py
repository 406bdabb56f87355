"""Splitting a list of job references at its commas, the ones inside brackets kept.

Its own module, with no imports: ``scancel`` and ``scontrol`` use it before
anything else loads (tests/cli/test_import_budget.py), and
``slurmlite.jobref`` parses the words it gives.
"""

from __future__ import annotations


def split_words(text: str) -> list[str]:
    """``"7,8_[1,2],9"`` -> ``["7", "8_[1,2]", "9"]`` (empty words dropped)."""
    words, depth, cur = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            words.append(cur)
            cur = ""
            continue
        depth += {"[": 1, "]": -1}.get(ch, 0)
        cur += ch
    words.append(cur)
    return [w for w in words if w]
