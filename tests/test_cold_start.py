"""Cold start: a server imports only what its first ``initialize`` needs (``bench/cold_start.py`` times it).

Nothing is timed here: a fresh interpreter serves one ``initialize`` the way a deployment does, over stdio
(``python -m wiremcp stdio``) and over HTTP (``app:asgi``'s lifespan and one POST, as uvicorn would drive
them), and then lists what it imported. Features the first answer does not use (jsonschema unless a schema
is written by hand, Redis, auth, Prometheus until scraped, OpenTelemetry unless configured, ``requestState``
encryption, the command line's package metadata, and on stdio the whole HTTP stack) must not be among them.
(pydantic is: the tools' schemas are built as they are registered, so that a definition pydantic refuses
fails where it is written.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "cold", "version": "1"}}}

DEFERRED = ("jsonschema", "referencing", "cryptography", "redis",
            "prometheus_client", "opentelemetry", "authlib", "joserfc", "httpx", "wiremcp.auth",
            "wiremcp.transports.redis", "wiremcp.transports.observability.exposition",
            "wiremcp.transports.observability.tracing")
"""Never needed to answer the first ``initialize`` of the default deployment."""
SSE = ("sse_starlette", "starlette", "anyio")
"""Not needed until a stream opens (a JSON answer is written without them)."""
HTTP_STACK = ("uvicorn", "wiremcp.transports.http_app", "wiremcp.transports.observability", *SSE)
"""Also not needed on stdio."""

_RECORD = ("import atexit, sys\n"
           "RECORD = sys.argv.pop()\n"
           "def _record():\n"
           "    with open(RECORD, 'w') as out:\n"
           "        out.write('\\n'.join(sorted(sys.modules)))\n"
           "atexit.register(_record)\n")

_STDIO = _RECORD + ("import runpy\n"
                    "sys.argv = ['wiremcp', 'stdio', 'examples.word_count:server']\n"
                    "runpy.run_module('wiremcp', run_name='__main__', alter_sys=True)\n")
"""``python -m wiremcp stdio examples.word_count:server``, recording ``sys.modules`` as it exits (stdin closed
after one ``initialize``: it imported what that answer needed, and what shutting down needs)."""

_HTTP = _RECORD + """import asyncio

async def main():
    import app
    asgi = app.asgi
    startup = asyncio.Queue()
    await startup.put({"type": "lifespan.startup"})
    started = asyncio.Event()

    async def lifespan_send(message):
        if message["type"] == "lifespan.startup.complete":
            started.set()

    lifespan = asyncio.create_task(asgi({"type": "lifespan", "asgi": {"version": "3.0"}}, startup.get,
                                        lifespan_send))
    await started.wait()
    body = sys.stdin.buffer.read()
    sent = []

    async def receive():
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message):
        sent.append(message)

    headers = [(b"host", b"127.0.0.1:8000"), (b"content-type", b"application/json"),
               (b"accept", b"application/json, text/event-stream"), (b"mcp-protocol-version", b"2025-11-25")]
    await asgi({"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
                "scheme": "http", "path": "/mcp", "raw_path": b"/mcp", "query_string": b"", "headers": headers,
                "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8000), "root_path": ""}, receive, send)
    print(sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:]).decode())
    await startup.put({"type": "lifespan.shutdown"})
    await lifespan

asyncio.run(main())
"""
"""``WIREMCP_SERVER=examples.word_count:server uvicorn app:asgi`` without uvicorn: the app's lifespan started
and one ``initialize`` POSTed, then ``sys.modules`` recorded."""


def _imported(code: str, tmp_path: Path) -> tuple[str, set[str]]:
    record = tmp_path / "modules.txt"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WIREMCP_", "OTEL_"))}
    env.update(WIREMCP_SERVER="examples.word_count:server", WIREMCP_LOG_LEVEL="WARNING", PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", code, str(record)], input=json.dumps(INITIALIZE) + "\n",
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=60, check=True)
    return done.stdout, set(record.read_text().split())


def _loaded(modules: set[str], packages: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == p or m.startswith(p + ".") for p in packages))


def test_stdio_answers_initialize_without_the_optional_features_or_http(tmp_path: Path) -> None:
    answer, modules = _imported(_STDIO, tmp_path)
    assert json.loads(answer)["result"]["serverInfo"]["name"] == "word_count"
    assert "wiremcp.transports.stdio" in modules
    assert _loaded(modules, DEFERRED + HTTP_STACK) == []


def test_http_answers_initialize_without_the_optional_features(tmp_path: Path) -> None:
    answer, modules = _imported(_HTTP, tmp_path)
    status, body = answer.split(" ", 1)
    assert (status, json.loads(body)["result"]["protocolVersion"]) == ("200", "2025-11-25")
    assert "wiremcp.transports.http_app" in modules
    assert _loaded(modules, DEFERRED + SSE) == []
