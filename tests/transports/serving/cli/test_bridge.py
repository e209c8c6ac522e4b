"""``wiremcp bridge URL``: a user's mistake is one line and exit status 2, before anything is served. The bridge at
work, driven by the official client in both eras: ``tests/e2e/test_bridging.py``; as the Gateway page types it:
``tests/docs/test_gateway.py``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.command_line import run_main


@pytest.mark.parametrize(("argv", "expected"), [
    (["bridge", "example.com/mcp"], "wiremcp bridge: 'example.com/mcp' is not an http:// or https:// URL"),
    (["bridge", "https://example.com/mcp", "--header", "Bearer x"], "--header 'Bearer x' is not 'Name: value'"),
    (["bridge", "https://example.com/mcp", "--timeout", "0"], "--timeout must be a positive number of seconds"),
    (["bridge", "https://example.com/mcp", "--", "npx", "x"], "wiremcp bridge takes no command after --"),
])
def test_a_mistake_is_one_line_and_exit_2(tmp_path: Path, argv: list[str], expected: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WIREMCP_")}
    done = run_main(argv, tmp_path, env)
    assert done.returncode == 2, done
    assert "Traceback" not in done.stderr, done.stderr
    (line,) = [line for line in done.stderr.splitlines() if line.startswith("wiremcp: error: ")]
    assert expected in line
