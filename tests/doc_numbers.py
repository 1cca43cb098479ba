"""The machinery of tests/test_doc_numbers.py: claims (a sentence's numbers, computed from
a stored summary table) checked against the text of a docs page, and the check that no
number in a marked passage is left unchecked.

A passage is marked ``<!-- numbers: NAME ... -->`` ... ``<!-- end numbers -->``. Every
number in it must be part of a claim's sentence (its numbers equal to the table's, as
formatted) or of a fixed setting the study was run with (``K = 10``, ``60 m``): a quoted
number that no table gives fails the check, and so does a claim whose numbers differ.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

MARK = re.compile(r"<!-- numbers: (?P<name>[\w-]+).*?-->(?P<text>.*?)<!-- end numbers -->",
                  re.S)
COMMENT = re.compile(r"<!--.*?-->", re.S)


@dataclass(frozen=True)
class Claim:
    """A sentence ``pattern`` (a regex on the page's text with its white space
    collapsed) whose groups must equal ``expected()``; ``expected`` may also assert
    the sentence's words (``slowest``, ``grows with K``)."""

    pattern: str
    expected: Callable[[], Sequence[str]]


def flat(text: str) -> str:
    """``text`` without HTML comments, its white space collapsed to single spaces."""
    return " ".join(COMMENT.sub(" ", text).split())


def passages(page: str, name: str) -> list[str]:
    """The flattened passages of ``page`` marked with ``name``."""
    return [flat(m["text"]) for m in MARK.finditer(page) if m["name"] == name]


def problems(page: str, name: str, claims: Sequence[Claim], settings: Sequence[str],
             everywhere: Sequence[Claim] = ()) -> list[str]:
    """What is wrong with the numbers of ``page``: a claim not found or whose numbers
    differ from its table (``claims`` in the passages marked ``name``, ``everywhere`` in
    the whole page), and the numbers of a marked passage that neither a claim nor a
    ``settings`` pattern covers. Empty: all is read from the tables."""
    found: list[str] = []
    texts = passages(page, name)
    if not texts:
        return [f"no passage marked {name!r}"]
    whole = flat(page)
    for claims_here, where in ((claims, texts), (everywhere, [whole])):
        for claim in claims_here:
            hits = [m for text in where for m in re.finditer(claim.pattern, text)]
            if not hits:
                found.append(f"sentence not found (moved or changed?): {claim.pattern}")
                continue
            want = tuple(claim.expected())
            for hit in hits:
                if hit.groups() != want:
                    found.append(f"{hit[0]!r}: the table gives {want}, the text "
                                 f"{hit.groups()}")
    for text in texts:
        covered = [False] * len(text)
        for pattern in [*(c.pattern for c in claims), *settings]:
            for hit in re.finditer(pattern, text):
                covered[hit.start():hit.end()] = [True] * (hit.end() - hit.start())
        for number in re.finditer(r"\d+(?:[.,]\d+)*", text):
            if not all(covered[number.start():number.end()]):
                context = text[max(0, number.start() - 40):number.end() + 20]
                found.append(f"a number no table gives: {number[0]} in ...{context}...")
    return found
