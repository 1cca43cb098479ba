"""A griffe extension for the API reference (mkdocs.yml loads it): bflnet's docstrings are
prose with a few reST constructs, rendered here as Markdown.

- ``:class:`~a.b.C``` and the other Python roles become code spans (``C`` with ``~``,
  else the whole target);
- doctest blocks (``>>>`` lines, their ``...`` continuations and their output, up to a
  blank line) become fenced ``pycon`` blocks;
- a paragraph ending in ``::`` ends in ``:``, and the indented literal block after it
  becomes a fenced block.

Nothing else changes: ``double backticks`` are code spans in Markdown too.
"""

from __future__ import annotations

import re
import textwrap

import griffe

ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|attr|data|obj|exc|const|ref|term):`([^`]+)`")


def _role(match: re.Match[str]) -> str:
    target = match.group(1).strip()
    if target.startswith("~"):
        target = target[1:].rsplit(".", 1)[-1]
    return f"`{target}`"


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _fence(lines: list[str], language: str) -> list[str]:
    """``lines`` as a fenced block at the margin (Markdown's fenced blocks cannot nest in
    a list item, so a block inside one ends the list)."""
    body = textwrap.dedent("\n".join(lines)).splitlines()
    return [f"```{language}", *body, "```"]


def markdown(text: str) -> str:
    """``text`` (a docstring) with its reST roles, doctests and literal blocks as
    Markdown."""
    text = ROLE.sub(_role, text)
    lines = text.splitlines()
    out: list[str] = []
    i = 0
    in_fence = False
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if stripped.startswith("```"):
            in_fence = not in_fence
            out.append(line)
            i += 1
            continue
        if in_fence:
            out.append(line)
            i += 1
            continue
        if stripped.startswith(">>>"):
            block = []
            while i < len(lines) and lines[i].strip():
                block.append(lines[i])
                i += 1
            if out and out[-1].strip():
                out.append("")
            out += _fence(block, "pycon")
            out.append("")
            continue
        if stripped.endswith("::") and not stripped.startswith(".."):
            base = _indent(line)
            out.append(line[: len(line.rstrip()) - 1])  # "text::" -> "text:"
            j = i + 1
            while j < len(lines) and not lines[j].strip():
                j += 1
            block = []
            while j < len(lines) and (not lines[j].strip() or _indent(lines[j]) > base):
                block.append(lines[j])
                j += 1
            while block and not block[-1].strip():
                block.pop()
            if block:
                out.append("")
                out += _fence(block, "text")
                out.append("")
                i = j
                continue
            i += 1
            continue
        out.append(line)
        i += 1
    return "\n".join(out)


class RstToMarkdown(griffe.Extension):
    """Rewrites every docstring once the object tree is complete."""

    def on_object(self, *, obj: griffe.Object, **kwargs: object) -> None:
        if obj.docstring is not None:
            obj.docstring.value = markdown(obj.docstring.value)
