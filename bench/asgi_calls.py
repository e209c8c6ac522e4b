"""The framework's own cost per request, without sockets or an HTTP server: ``tools/call`` and ``tools/list``
POSTed as raw ASGI calls into ``MCPHttpApp`` (what uvicorn would call), in both eras, one at a time on one
event loop. What it measures is the Python between the ASGI call and the answer (classification, sessions,
dispatch, the tool, serialization), so that two versions of wiremcp can be compared without the noise of a
network benchmark: run it under each and compare.

    python bench/asgi_calls.py [--calls 20000] [--rounds 5] [--app endpoint|served] [--loop uvloop|asyncio]

It prints one line per era and method: microseconds per request (the best round, and the median).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.servers import wiremcp_server
from wiremcp.transports import MCPHttpApp
from wiremcp.transports.asgi import ASGIApp

HANDSHAKE, STATELESS = "2025-11-25", "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": STATELESS, "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"}}
TEXT = "the quick brown fox jumps over the lazy dog"


def _scope(headers: dict[str, str]) -> dict[str, Any]:
    raw = {"host": "127.0.0.1:8000", "content-type": "application/json",
           "accept": "application/json, text/event-stream", **headers}
    return {"type": "http", "method": "POST", "path": "/mcp", "root_path": "", "query_string": b"",
            "headers": [(k.encode(), v.encode()) for k, v in raw.items()], "scheme": "http", "http_version": "1.1",
            "server": ("127.0.0.1", 8000), "client": ("127.0.0.1", 50000)}


async def _post(app: ASGIApp, scope: dict[str, Any], body: bytes) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []
    message = {"type": "http.request", "body": body, "more_body": False}

    async def receive() -> dict[str, Any]:
        return message

    async def send(out: Any) -> None:
        sent.append(out)

    await app(scope, receive, send)
    return sent


_LIFESPANS: list[asyncio.Future[None]] = []
"""The served app's lifespan tasks, kept while the process runs."""


async def _served() -> ASGIApp:
    """What ``uvicorn app:asgi`` serves (operations, metrics, guard, routes, endpoint), its lifespan started."""
    os.environ["WIREMCP_SERVER"] = "bench.servers:wiremcp_server"
    from wiremcp.transports.serving.deployment import build_asgi

    app = build_asgi()
    started = asyncio.Event()
    messages = [{"type": "lifespan.startup"}]

    async def receive() -> dict[str, Any]:
        if messages:
            return messages.pop()
        await asyncio.Event().wait()  # shutdown never comes: the process ends
        return {}

    async def send(out: Any) -> None:
        started.set()

    _LIFESPANS.append(asyncio.ensure_future(app({"type": "lifespan"}, receive, send)))
    await started.wait()
    return app


async def measure(calls: int, rounds: int, served: bool) -> dict[str, list[float]]:
    app: ASGIApp = await _served() if served else MCPHttpApp(wiremcp_server)
    opened = await _post(app, _scope({}), orjson.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": HANDSHAKE, "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}))
    session = dict(opened[0]["headers"])[b"mcp-session-id"].decode()
    on_session = _scope({"mcp-session-id": session, "mcp-protocol-version": HANDSHAKE})
    await _post(app, on_session, b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    cases: dict[str, tuple[dict[str, Any], bytes]] = {}
    for method, params in (("tools/call", {"name": "word_count", "arguments": {"text": TEXT}}), ("tools/list", {})):
        cases[f"{HANDSHAKE} {method}"] = (on_session, orjson.dumps(
            {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
        headers = {"mcp-protocol-version": STATELESS, "mcp-method": method}
        if method == "tools/call":
            headers["mcp-name"] = "word_count"
        cases[f"{STATELESS} {method}"] = (_scope(headers), orjson.dumps(
            {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": META}}))
    results: dict[str, list[float]] = {name: [] for name in cases}
    for name, (scope, body) in cases.items():  # check once: every case answers 200 with a result
        answer = await _post(app, scope, body)
        if answer[0]["status"] != 200 or b'"result"' not in answer[-1]["body"]:
            raise SystemExit(f"{name}: not a result: {answer}")
    for _ in range(rounds):
        for name, (scope, body) in cases.items():
            start = time.perf_counter()
            for _ in range(calls):
                await _post(app, scope, body)
            results[name].append((time.perf_counter() - start) / calls * 1e6)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--loop", choices=("uvloop", "asyncio"), default="uvloop",
                        help="the event loop (default: uvloop, as uvicorn picks it where installed)")
    parser.add_argument("--app", choices=("endpoint", "served"), default="endpoint",
                        help="endpoint: MCPHttpApp alone; served: what `uvicorn app:asgi` serves, with its "
                             "operations layer (probes, metrics, access log) and default settings")
    args = parser.parse_args()
    factory = None
    if args.loop == "uvloop":
        import uvloop

        factory = uvloop.new_event_loop
    with asyncio.Runner(loop_factory=factory) as runner:
        results = runner.run(measure(args.calls, args.rounds, args.app == "served"))
    for name, values in results.items():
        print(f"{name:<24} best {min(values):7.1f} us  median {statistics.median(values):7.1f} us")


if __name__ == "__main__":
    main()
