"""The fenced code blocks of a Markdown page (the README, the docs pages), each named by the marker on the line
before it (``<!-- readme: NAME -->`` in the README, ``<!-- docs: NAME -->`` in docs/): what the tests that run a
page's blocks read."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Block:
    page: Path
    name: str
    """The marker's name; empty for a block without one."""
    language: str
    text: str
    line: int
    """The line of the opening fence (1-based)."""


def blocks(page: Path, marker: str) -> list[Block]:
    """Every fenced block of ``page``, in order, named by a ``<!-- MARKER: NAME -->`` line just before it."""
    lines = page.read_text().splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        fence = re.fullmatch(r"```(\w*)", lines[i])
        if fence is None:
            i += 1
            continue
        named = re.fullmatch(rf"<!-- {re.escape(marker)}: (.+?) -->", lines[i - 1]) if i else None
        end = lines.index("```", i + 1)
        out.append(Block(page, named.group(1) if named else "", fence.group(1), "\n".join(lines[i + 1:end]) + "\n",
                         i + 1))
        i = end + 1
    return out


def block(page: Path, marker: str, name: str) -> Block:
    """The one block of ``page`` named ``name``."""
    (found,) = [b for b in blocks(page, marker) if b.name == name]
    return found
