"""A server's lifespan in a real process: ``uvicorn app:asgi`` enters it before it serves and leaves it on SIGTERM,
``wiremcp stdio`` for as long as its input lasts, and a handler answers with what it opened
(``tests/support/lifespan_server.py`` notes each step in a file)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.support.docs_pages import ENV, STATELESS_META
from tests.support.http import ACCEPT_BOTH, START_BOUND, run_uvicorn

pytestmark = pytest.mark.timeout(60)

SERVER = "tests.support.lifespan_server:server"
ROOT = Path(__file__).resolve().parents[2]


def _call() -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "pool", "arguments": {}, "_meta": STATELESS_META}}


def test_uvicorn_enters_it_before_serving_and_leaves_it_on_sigterm(tmp_path: Path) -> None:
    log = tmp_path / "lifespan.log"
    with run_uvicorn(SERVER, {"LIFESPAN_LOG": str(log)}) as process:
        assert log.read_text() == "started with-lifespan\n"  # before the port answered
        answer = httpx.post(process.url, json=_call(), headers={
            "accept": ACCEPT_BOTH, "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call",
            "mcp-name": "pool"}, timeout=10)
        process.stop_and_wait()
    assert answer.json()["result"]["content"][0]["text"] == "open"
    assert log.read_text() == "started with-lifespan\nstopped with-lifespan\n"


def test_wiremcp_stdio_holds_it_while_its_input_lasts(tmp_path: Path) -> None:
    log = tmp_path / "lifespan.log"
    done = subprocess.run([sys.executable, "-m", "wiremcp", "stdio", SERVER], cwd=ROOT,
                          env={**ENV, "LIFESPAN_LOG": str(log)}, input=json.dumps(_call()) + "\n",
                          capture_output=True, text=True, timeout=START_BOUND)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["result"]["content"][0]["text"] == "open"
    assert log.read_text() == "started with-lifespan\nstopped with-lifespan\n"
