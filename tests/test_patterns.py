"""Every regular expression of the package checks a whole value: none ends with ``$``, which also matches
before a final newline, so that ``"https://a.example\\n"`` would pass a check of ``...$`` with ``match``.
Patterns are matched with ``fullmatch`` (or end with ``\\Z`` where a library calls ``match``)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ("app", "transports", "auth")
FUNCTIONS = {"compile", "match", "fullmatch", "search"}


def patterns() -> list[tuple[str, int, str]]:
    found = []
    for folder in PACKAGE:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and isinstance(node.func.value, ast.Name) and node.func.value.id == "re"
                        and node.func.attr in FUNCTIONS and node.args
                        and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                    found.append((f"{path.relative_to(ROOT)}:{node.lineno}", node.lineno, node.args[0].value))
    return found


def test_the_package_has_patterns_to_check() -> None:
    assert len(patterns()) > 10


def test_no_pattern_ends_with_a_dollar_that_lets_a_newline_through() -> None:
    loose = [where for where, _, pattern in patterns() if pattern.endswith("$") and not pattern.endswith("\\$")]
    assert loose == [], "end these with \\Z, or drop the anchors and use fullmatch"
