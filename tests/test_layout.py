"""The suite's own layout: what tests share lives in ``tests/support/``; no test module imports another
test module or a ``conftest`` (a test's helpers moving with it would otherwise break a stranger)."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def test_tests_share_code_through_tests_support_only() -> None:
    offenders = []
    for path in sorted(TESTS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else [])
            offenders += [f"{path.relative_to(TESTS)}:{getattr(node, 'lineno', 0)} {name}" for name in names
                          if name.startswith("tests.") and not name.startswith("tests.support")]
    assert not offenders, offenders
