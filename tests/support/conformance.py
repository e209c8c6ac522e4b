"""Running the official conformance suite (``@modelcontextprotocol/conformance``, through ``npx``) against a
server's URL, and reading its summary: what the conformance tests share."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.support.node import node_env, npx

RUN_BOUND = 600  # seconds; a failure bound for one suite run (npx may download the suite first)


def run_suite(node_bin: Path, version: str, url: str, *extra: str) -> str:
    """The suite of ``version`` (``--suite all``, and ``extra`` options) run against ``url``: what it printed."""
    command = [npx(node_bin), "-y", f"@modelcontextprotocol/conformance@{version}",
               "server", "--url", url, "--suite", "all", *extra]
    done = subprocess.run(command, capture_output=True, text=True, env=node_env(node_bin), timeout=RUN_BOUND)
    return done.stdout + done.stderr


def scenarios(output: str) -> tuple[list[str], list[str]]:
    """(passed, failed) scenario names from the suite's summary."""
    summary = output[output.rfind("=== SUMMARY ==="):]
    passed = re.findall(r"^✓ ([\w-]+):", summary, re.M)
    failed = re.findall(r"^✗ ([\w-]+):", summary, re.M)
    return passed, failed
