"""The suite's own layout: the tests mirror the modules (one test module per source module, named after it,
in the mirrored folder); what tests share lives in ``tests/support/``; no test module imports another
test module or a ``conftest`` (a test's helpers moving with it would otherwise break a stranger)."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent

MIRRORED = ("app", "transports", "auth")
"""Source folders whose modules ``tests/<folder>/`` mirrors: ``tests/app`` <-> ``app/``, ``tests/transports/<sub>``
<-> ``transports/<sub>``, ``tests/auth`` <-> ``auth/`` (the end-to-end, deployment and example tests, and
the checks of the whole code base beside this one, are no module's)."""
NOT_MODULES = frozenset({"__init__.py", "__main__.py", "types.py", "unavailable.py"})
"""Package markers, the command line's entry, type aliases and the one exception class of the stores
(raised and answered by the modules that use it, and tested there): nothing of their own to test."""
NOT_TEST_MODULES = frozenset({"__init__.py", "conftest.py"})


def test_the_tests_mirror_the_modules() -> None:
    """Every test module under ``tests/app``, ``tests/transports`` and ``tests/auth`` is ``test_<module>.py``
    after a module in the mirrored source folder, and every module there has its test module."""
    strays: list[str] = []
    untested: list[str] = []
    for folder in MIRRORED:
        source, tests = ROOT / folder, TESTS / folder
        for path in sorted(tests.rglob("*.py")):
            relative = path.relative_to(tests)
            if path.name in NOT_TEST_MODULES or "__pycache__" in relative.parts:
                continue
            module = source / relative.parent / path.name.removeprefix("test_")
            if not path.name.startswith("test_") or not module.is_file():
                strays.append(f"{path.relative_to(TESTS)}: no module {module.relative_to(ROOT)}")
        for path in sorted(source.rglob("*.py")):
            relative = path.relative_to(source)
            if path.name in NOT_MODULES or "__pycache__" in relative.parts:
                continue
            test = tests / relative.parent / f"test_{path.name}"
            if not test.is_file():
                untested.append(f"{path.relative_to(ROOT)}: no {test.relative_to(ROOT)}")
    assert not strays, "test modules named after no module:\n" + "\n".join(strays)
    assert not untested, "modules without a test module:\n" + "\n".join(untested)


def test_tests_share_code_through_tests_support_only() -> None:
    offenders = []
    for path in sorted(TESTS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else [])
            offenders += [f"{path.relative_to(TESTS)}:{getattr(node, 'lineno', 0)} {name}" for name in names
                          if name.startswith("tests.") and not name.startswith("tests.support")]
    assert not offenders, offenders
