"""``wiremcp list`` and ``wiremcp call``: what a server offers, and one tool call, from the shell."""

from __future__ import annotations

import argparse
from typing import Any


def register(commands: argparse._SubParsersAction[Any]) -> None:
    """Not yet: the next commit adds the commands."""
