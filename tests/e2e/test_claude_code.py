"""Claude Code (npm ``@anthropic-ai/claude-code``), a real host that launches servers as commands, with a remote
server installed by ``wiremcp install claude-code --remote URL``: ``claude mcp list`` starts the entry (``wiremcp
bridge URL``) and reports the server connected."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.http import run_uvicorn
from tests.support.node import node_bin, node_env, npx

pytestmark = pytest.mark.timeout(300)

CLAUDE_CODE = "2.1.332"
"""The Claude Code release the test pins."""


def test_claude_code_reports_a_bridged_remote_server_connected(tmp_path: Path) -> None:
    node = node_bin("Claude Code")
    home = tmp_path / "home"
    home.mkdir()
    env = {**node_env(node), "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}
    env = {k: v for k, v in env.items() if not k.startswith("WIREMCP_") and not k.startswith("ANTHROPIC_")}
    with run_uvicorn("examples.word_count:server") as remote:
        installed = subprocess.run([sys.executable, "-m", "wiremcp", "install", "claude-code", "--remote", remote.url,
                                    "--name", "words"], env=env, capture_output=True, text=True, timeout=60)
        assert installed.returncode == 0, installed.stderr
        listed = subprocess.run([npx(node), "-y", f"@anthropic-ai/claude-code@{CLAUDE_CODE}", "mcp", "list"],
                                env=env, cwd=tmp_path, capture_output=True, text=True, timeout=240,
                                stdin=subprocess.DEVNULL)
    assert listed.returncode == 0, listed.stdout + listed.stderr
    (line,) = [line for line in listed.stdout.splitlines() if line.startswith("words:")]
    assert f"-m wiremcp bridge {remote.url}" in line
    assert line.endswith("✔ Connected"), listed.stdout
    assert os.path.exists(home / ".claude.json")
