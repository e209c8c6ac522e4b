"""The handshake-era client of the rolling load (``bench/rolling_load.py``; 2025-11-25, one session each):
``initialize`` + ``notifications/initialized``, ``resources/subscribe`` to its own resource, a GET stream kept
open and resumed with ``Last-Event-ID``, and requests whose broken streams are resumed until answered.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from typing import TYPE_CHECKING, Any

import httpx

from bench.rolling_client import Client
from bench.rolling_counts import Ledger, Op
from bench.rolling_http import (
    ACCEPT_BOTH,
    CLIENT_INFO,
    HANDSHAKE,
    JSON,
    UPDATED,
    Exchange,
    Failed,
    expect_status,
    read_answer,
    retry_after,
    sse_events,
    text_of,
)

if TYPE_CHECKING:
    from bench.rolling_load import RollingLoad


class HandshakeClient(Client):
    era = "handshake"

    def __init__(self, load: RollingLoad, name: str) -> None:
        super().__init__(load, name)
        self.sid = ""
        self.ledger = Ledger()
        self.get_open = False
        self.get_up = asyncio.Event()
        self.get_reconnects = 0
        self.get_since = time.monotonic()
        self.last_update: str | None = None

    def listening(self) -> bool:
        return self.get_open

    def headers(self, **extra: str) -> dict[str, str]:
        return {"accept": ACCEPT_BOTH, "content-type": "application/json", "mcp-session-id": self.sid,
                "mcp-protocol-version": HANDSHAKE, **extra}

    async def setup(self) -> bool:
        """initialize, notifications/initialized, resources/subscribe."""
        return (await self.run("initialize", self._initialize)
                and await self.run("subscribe", self._subscribe))

    async def _initialize(self, op: Op) -> None:
        async def attempt() -> None:
            body = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": HANDSHAKE, "capabilities": {}, "clientInfo": CLIENT_INFO}}
            exchange = Exchange(0)
            try:
                async with self.http.stream("POST", self.url, content=json.dumps(body),
                                            headers={"accept": ACCEPT_BOTH, "content-type": "application/json"}) as r:
                    self.tally.http_requests += 1
                    await expect_status(r)
                    self.sid = r.headers.get("mcp-session-id", "")
                    await read_answer(r, exchange, None)
            except httpx.TransportError as exc:
                raise Failed(f"connection: {type(exc).__name__}", str(exc)) from None
            if exchange.answer is None or not self.sid:
                raise Failed("no answer", "initialize", missing=True)
            exchange.result()
        await self.retrying(op, attempt)

        async def initialized() -> None:
            body = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            try:
                response = await self.http.post(self.url, content=json.dumps(body), headers=self.headers())
            except httpx.TransportError as exc:
                raise Failed(f"connection: {type(exc).__name__}", str(exc)) from None
            self.tally.http_requests += 1
            await expect_status(response, 202)
        await self.retrying(op, initialized)

    async def _subscribe(self, op: Op) -> None:
        await self.call(op, "resources/subscribe", {"uri": self.uri})

    async def call(self, op: Op, method: str, params: JSON, *, token: str | None = None) -> tuple[JSON, Exchange]:
        """A request on the session; its stream resumed (GET, ``Last-Event-ID``) until it is answered."""
        async def attempt() -> tuple[JSON, Exchange]:
            exchange = Exchange(next(self.ids), token)
            sent = dict(params)
            if token is not None:
                sent["_meta"] = {"progressToken": token}
            body = {"jsonrpc": "2.0", "id": exchange.rid, "method": method, "params": sent}
            answering = False
            try:
                async with self.http.stream("POST", self.url, content=json.dumps(body), headers=self.headers()) as r:
                    self.tally.http_requests += 1
                    await expect_status(r)
                    answering = True
                    await read_answer(r, exchange, self.ledger)
            except httpx.TransportError as exc:
                if exchange.answer is None and exchange.last_id is None:
                    raise Failed(f"connection: {type(exc).__name__}", str(exc), missing=answering) from None
            await self._resume(op, exchange)
            self._count(op, exchange)
            return exchange.result(), exchange
        return await self.retrying(op, attempt)

    def _count(self, op: Op, exchange: Exchange) -> None:
        self.tally.kind(op.kind).duplicated += max(0, exchange.answers - 1)
        self.tally.unexpected += exchange.unexpected

    async def _resume(self, op: Op, exchange: Exchange) -> None:
        """GET with the stream's ``Last-Event-ID`` (after the server's ``retry``) until the answer comes."""
        resumed = 0
        while exchange.answer is None:
            if exchange.last_id is None:
                raise Failed("stream ended without an answer", exchange.story(), missing=True)
            if resumed >= self.options.resume_limit:
                raise Failed("no answer after resuming", f"{resumed} resumptions of {exchange.last_id}",
                             missing=True)
            resumed += 1
            self.tally.post_resumptions += 1
            await asyncio.sleep(exchange.retry_ms / 1000)  # the server's retry, as the protocol requires
            headers = self.headers(accept="text/event-stream", **{"last-event-id": exchange.last_id})
            headers.pop("content-type")
            with contextlib.suppress(httpx.TransportError):
                async with self.http.stream("GET", self.url, headers=headers) as r:
                    self.tally.http_requests += 1
                    if retry_after(r) is not None:
                        await r.aread()
                        self.tally.retries[f"{op.kind}: resume http 503"] += 1
                        continue
                    await expect_status(r)
                    await read_answer(r, exchange, self.ledger)

    async def task(self, op: Op) -> None:
        ms = self.rng.randint(*self.options.job_ms)
        created, _ = await self.call(op, "tools/call", {"name": "job", "arguments": {"ms": ms},
                                                        "task": {"ttl": 120_000}})
        task = created.get("task")
        if not isinstance(task, dict) or "taskId" not in task:
            raise Failed("no task", json.dumps(created)[:200])
        self.tally.tasks_created += 1
        state = await self.poll_task(op, task["taskId"], task.get("pollInterval"))
        if state["status"] != "completed":
            raise Failed(f"task {state['status']}", str(state.get("statusMessage")))
        result, _ = await self.call(op, "tasks/result", {"taskId": task["taskId"]})
        if text_of(result) != f"job: {ms} ms":
            raise Failed("wrong task result", json.dumps(result)[:200])
        self.tally.tasks_completed += 1

    # the GET stream
    async def ready(self) -> None:
        await self.get_up.wait()

    async def streams(self) -> None:
        last_id: str | None = None
        retry_ms = 1000
        timeout = httpx.Timeout(self.options.stream_read_timeout, connect=5.0)
        while not self.load.closing.is_set() and not self.dead:
            ending = "ended"
            stats = self.tally.kind("handshake/get")
            stats.sent += 1
            headers = self.headers(accept="text/event-stream")
            headers.pop("content-type")
            if last_id is not None:
                headers["last-event-id"] = last_id
            try:
                async with self.http.stream("GET", self.url, headers=headers, timeout=timeout) as r:
                    self.tally.http_requests += 1
                    after = retry_after(r)
                    if after is not None:
                        await r.aread()
                        stats.ok += 1
                        stats.retried += 1
                        self.tally.retries["handshake/get: http 503"] += 1
                        retry_ms = int(min(after, self.options.retry_after_cap) * 1000)
                        ending = "503"
                    elif r.status_code != 200:
                        body = (await r.aread())[:200].decode("utf-8", "replace")
                        stats.failed += 1
                        self.tally.fail("handshake/get", f"http {r.status_code}", body, self.name)
                        self.dead = r.status_code == 404
                        ending = f"http {r.status_code}"
                    else:
                        stats.ok += 1
                        self.get_open = True
                        self.get_since = time.monotonic()
                        self.log(f"GET #{self.get_reconnects + 1} open (Last-Event-ID {last_id})")
                        async for event in sse_events(r):
                            if event.retry is not None:
                                retry_ms = event.retry
                            if event.id is not None:
                                if not self.ledger.record(event.id):
                                    continue
                                last_id = event.id
                                self.get_up.set()
                            if event.data:
                                await self._notified(event.message, event.id)
            except httpx.TransportError as exc:
                ending = type(exc).__name__
            finally:
                self.get_open = False
            if self.load.closing.is_set():
                break
            self.log(f"GET #{self.get_reconnects + 1} {ending} (last event {last_id})")
            self.get_reconnects += 1
            self.tally.get_endings[ending] += 1
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.load.closing.wait(), retry_ms / 1000)  # the server's retry

    async def _notified(self, message: Any, event_id: str | None) -> None:
        if isinstance(message, dict) and message.get("method") == UPDATED \
                and (message.get("params") or {}).get("uri") == self.uri:
            self.received += 1
            excess = self.received - (self.acked + self.touching + self.failed_touches)  # one touch at a time
            if excess > self.excess:
                self.excess = excess
                extra = (f"notification #{self.received} ({event_id}) makes {excess} more than the touches made "
                         f"(the last acknowledged, #{self.acked}, ran on {self.touched_on}); the one before it was "
                         f"{self.last_update} (GET stream #{self.get_reconnects + 1}, open "
                         f"{time.monotonic() - self.get_since:.2f}s)")
                self.tally.note(f"{self.name}: {extra}")
                self.log(extra, trouble=True)
            self.last_update = event_id
            await self.tally.poke()
        else:
            self.tally.unexpected += 1

