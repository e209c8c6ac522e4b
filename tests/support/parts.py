"""The real parts a test needs that no wheel of the test extra ships: headless Chromium (the MCP Apps view, the
documentation site),
npm (it installs Node 22 for the conformance suite), curl (the README's curl examples), and a system
``redis-server`` 7 or later (the store tests run on it as well as on the wheel's Valkey). Without one, a test
skips with one line saying what is missing. With ``--require-parts`` (``.ci/run`` sets it, as it installs
them all) the same line fails the test instead: a machine that should have every part runs every test.

``tests/conftest.py`` adds the option and sets ``required`` from it.
"""

from __future__ import annotations

import shutil
from typing import NoReturn

import pytest

OPTION = "--require-parts"
"""The pytest option that turns a missing part's skip into a failure."""

required = False
"""Whether a missing part fails the test (``--require-parts``) rather than skipping it."""


def missing(reason: str) -> NoReturn:
    """Skip the test for want of a part, ``reason`` saying which and how to get it; fail it under
    ``--require-parts``."""
    if required:
        pytest.fail(f"{reason} ({OPTION}: every part must be here)", pytrace=False)
    pytest.skip(reason)


def chromium(needed_for: str) -> str:
    """The headless Chromium on PATH; else the test is skipped (failed under ``--require-parts``), saying it
    was ``needed_for`` what."""
    return shutil.which("chromium") or shutil.which("chromium-browser") or missing(
        f"no chromium on PATH for {needed_for} (Debian: apt-get install chromium)")
