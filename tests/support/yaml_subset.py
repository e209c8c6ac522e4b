"""A loader for the subset of YAML the deployment files are written in, so that the tests need no YAML
library: block mappings and sequences, ``---`` between documents, comments, plain and quoted scalars,
and JSON-compatible flow collections (``["CMD", "redis-cli", "ping"]``).

Anything outside the subset (anchors, tags, block scalars, multi-line scalars, tabs, YAML 1.1's
``yes``/``no``/``on``/``off``, leading-zero numbers) is an error rather than a guess, so a file that loads
here means the same to a real YAML loader. Plain scalars resolve as YAML 1.1 does for what is left:
``true``/``false``, ``null``/``~``, integers, decimal fractions; everything else is a string.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

_INT = re.compile(r"[-+]?(0|[1-9][0-9]*)")
_FLOAT = re.compile(r"[-+]?(0|[1-9][0-9]*)?\.[0-9]+")
_AMBIGUOUS = re.compile(r"(?i)(y|n|yes|no|on|off|[-+]?0[0-9_]+|[-+]?\.(inf|nan)|[0-9]+:[0-9]+(:[0-9]+)*"
                        r"|[0-9]{4}-[0-9]{2}-[0-9]{2}.*|[-+]?[0-9][0-9_]*(\.[0-9_]*)?[eE][-+]?[0-9]+|0[xob].*)")
_UNSUPPORTED_START = tuple("&*!|>%@`")


class YAMLSubsetError(ValueError):
    pass


@dataclass
class _Line:
    number: int
    indent: int
    text: str


def _strip_comment(line: str) -> str:
    quote = ""
    escaped = False
    for i, char in enumerate(line):
        if quote == '"':
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                quote = ""
        elif quote == "'":
            if char == "'":
                quote = ""
        elif char in "\"'" and (i == 0 or line[i - 1] in " :-[,{"):
            quote = char
        elif char == "#" and (i == 0 or line[i - 1] in " \t"):
            return line[:i].rstrip()
    return line.rstrip()


def _lines(text: str) -> list[list[_Line]]:
    documents: list[list[_Line]] = [[]]
    for number, raw in enumerate(text.splitlines(), 1):
        if "\t" in raw[:len(raw) - len(raw.lstrip())]:
            raise YAMLSubsetError(f"line {number}: tab in indentation")
        if raw.rstrip() == "---":
            documents.append([])
            continue
        content = _strip_comment(raw)
        if content.strip():
            documents[-1].append(_Line(number, len(content) - len(content.lstrip(" ")), content.strip()))
    return [document for document in documents if document]


def _is_item(text: str) -> bool:
    return text == "-" or text.startswith("- ")


def _split_key(line: _Line) -> tuple[str, str] | None:
    """``key: rest`` -> (key, rest); None when the line is not a mapping entry."""
    text = line.text
    if text[0] in "\"'[{":
        return None
    match = re.match(r"([^\s:#][^:#]*?):(?:\s+(.*))?$", text)
    if match is None:
        return None
    return match.group(1), match.group(2) or ""


def scalar(text: str, number: int = 0) -> Any:
    if text.startswith('"'):
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            raise YAMLSubsetError(f"line {number}: a double-quoted scalar must be JSON-compatible: {text}") from None
    if text.startswith("'"):
        if len(text) < 2 or not text.endswith("'") or "'" in text[1:-1].replace("''", ""):
            raise YAMLSubsetError(f"line {number}: bad single-quoted scalar {text}")
        return text[1:-1].replace("''", "'")
    if text.startswith(("[", "{")):
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            raise YAMLSubsetError(f"line {number}: flow collections must be JSON-compatible: {text}") from None
    if text.startswith(_UNSUPPORTED_START):
        raise YAMLSubsetError(f"line {number}: unsupported YAML: {text}")
    if ": " in text or " #" in text:
        raise YAMLSubsetError(f"line {number}: ambiguous plain scalar {text!r}: quote it")
    if text in ("true", "True", "TRUE"):
        return True
    if text in ("false", "False", "FALSE"):
        return False
    if text in ("null", "Null", "NULL", "~"):
        return None
    if _INT.fullmatch(text):
        return int(text)
    if _FLOAT.fullmatch(text):
        return float(text)
    if _AMBIGUOUS.fullmatch(text):
        raise YAMLSubsetError(f"line {number}: {text!r} means different things to different YAML loaders: quote it")
    return text


class _Parser:
    def __init__(self, lines: list[_Line]) -> None:
        self.lines = lines
        self.i = 0

    def _peek(self) -> _Line | None:
        return self.lines[self.i] if self.i < len(self.lines) else None

    def document(self) -> Any:
        first = self.lines[0]
        value = self.node(first.indent)
        if self.i < len(self.lines):
            line = self.lines[self.i]
            raise YAMLSubsetError(f"line {line.number}: unexpected indentation")
        return value

    def node(self, indent: int) -> Any:
        line = self._peek()
        assert line is not None
        if _is_item(line.text):
            return self.sequence(indent)
        if _split_key(line) is not None:
            return self.mapping(indent)
        if len(self.lines) == 1:
            self.i += 1
            return scalar(line.text, line.number)
        raise YAMLSubsetError(f"line {line.number}: multi-line scalars are not supported")

    def _block_under(self, indent: int, *, aligned_sequence: bool) -> Any:
        """What a ``key:`` or ``-`` with nothing after it on its line holds: the more indented block that
        follows, or (after a key) a sequence at the key's own column; else null."""
        line = self._peek()
        if line is not None and line.indent > indent:
            return self.node(line.indent)
        if aligned_sequence and line is not None and line.indent == indent and _is_item(line.text):
            return self.sequence(indent)
        return None

    def sequence(self, indent: int) -> list[Any]:
        items: list[Any] = []
        while (line := self._peek()) is not None and line.indent == indent and _is_item(line.text):
            rest = line.text[1:].lstrip()
            if not rest:
                self.i += 1
                items.append(self._block_under(indent, aligned_sequence=False))
                continue
            inner = _Line(line.number, indent + len(line.text) - len(rest), rest)
            if _is_item(rest) or _split_key(inner) is not None:
                self.lines[self.i] = inner  # "- key: value" opens a mapping at the key's column
                items.append(self.node(inner.indent))
            else:
                self.i += 1
                items.append(scalar(rest, line.number))
        if line is not None and line.indent > indent:
            raise YAMLSubsetError(f"line {line.number}: unexpected indentation")
        return items

    def mapping(self, indent: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        while (line := self._peek()) is not None and line.indent == indent and not _is_item(line.text):
            entry = _split_key(line)
            if entry is None:
                raise YAMLSubsetError(f"line {line.number}: expected 'key: value', got {line.text!r}")
            key, rest = entry
            if key in out:
                raise YAMLSubsetError(f"line {line.number}: duplicate key {key!r}")
            if key == "<<":
                raise YAMLSubsetError(f"line {line.number}: merge keys are not supported")
            self.i += 1
            out[key] = scalar(rest, line.number) if rest else self._block_under(indent, aligned_sequence=True)
        if line is not None and line.indent > indent:
            raise YAMLSubsetError(f"line {line.number}: unexpected indentation")
        return out


def load_all(text: str) -> list[Any]:
    """Every document of a YAML stream (documents with nothing in them are left out)."""
    return [_Parser(lines).document() for lines in _lines(text)]


def load(text: str) -> Any:
    documents = load_all(text)
    if len(documents) != 1:
        raise YAMLSubsetError(f"expected one document, found {len(documents)}")
    return documents[0]
