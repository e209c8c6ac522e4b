"""``docs/testing.md``, run: the page's servers and tests saved as a project of the reader's own, with the page's
pytest settings, and run there by pytest with none of ours (every warning an error)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.docs_pages import DOCS, ENV, block
from tests.support.users_project import run_pytest

pytestmark = pytest.mark.timeout(120)

PAGE = DOCS / "testing.md"
CHECKED = {"server", "testing", "testing-config", "bookings", "test-bookings", "test-wire"}


def test_the_testing_example_passes_in_a_project_of_ones_own(tmp_path: Path) -> None:
    """Saved as the user would save it, next to the server with the page's pytest settings, and run by pytest
    with none of ours: it passes, and without a warning."""
    run = run_pytest(tmp_path, {"server.py": block(PAGE, "server").text, "test_server.py": block(PAGE, "testing").text,
                                "pyproject.toml": block(PAGE, "testing-config").text}, ENV)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 passed" in run.stdout, run.stdout
    assert "warning" not in (run.stdout + run.stderr).lower(), run.stdout + run.stderr


def test_the_handler_and_wire_tests_pass_against_their_server(tmp_path: Path) -> None:
    """``bookings.py`` and its two test files, as the page names them: every test passes (both eras, the
    notifications, the missing capability, the scopes, the raw frames), without a warning."""
    run = run_pytest(tmp_path, {"bookings.py": block(PAGE, "bookings").text,
                                "test_bookings.py": block(PAGE, "test-bookings").text,
                                "test_wire.py": block(PAGE, "test-wire").text,
                                "pyproject.toml": block(PAGE, "testing-config").text}, ENV)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "8 passed" in run.stdout, run.stdout
    assert "warning" not in (run.stdout + run.stderr).lower(), run.stdout + run.stderr
