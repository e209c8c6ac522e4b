"""Shared test configuration (helpers live in tests/support/http.py and next to the tests that use them)."""

from __future__ import annotations

import pytest

from tests.support import parts


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(parts.OPTION, action="store_true", default=False,
                     help="fail, rather than skip, a test whose real part (Chromium, npm, curl, a system "
                          "redis-server 7 or later) is missing; .ci/run sets it")


def pytest_configure(config: pytest.Config) -> None:
    parts.required = bool(config.getoption(parts.OPTION))
