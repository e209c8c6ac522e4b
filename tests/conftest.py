"""Shared fixtures."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def repo_root() -> Path:
    return ROOT


@pytest.fixture
def mcpwire_command() -> list[str]:
    """The ``mcpwire`` console script of this environment, as a command prefix."""
    return [sys.executable, "-m", "app.cli"]
