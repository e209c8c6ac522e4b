"""The stateless-era clients of the rolling load (``bench/rolling_load.py``; 2026-07-28, no session): requests
that carry their own protocol version and capabilities, tasks through the tasks extension, a
``subscriptions/listen`` stream reopened whenever it ends; and ``BurstClient``, the same calls counted apart.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import TYPE_CHECKING

import httpx

from bench.rolling_client import Client
from bench.rolling_counts import Op
from bench.rolling_http import (
    ACCEPT_BOTH,
    ACKNOWLEDGED,
    CLIENT_INFO,
    JSON,
    META_CAPABILITIES,
    META_CLIENT_INFO,
    META_VERSION,
    STATELESS,
    SUBSCRIPTION_ID,
    UPDATED,
    WITH_TASKS,
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


class StatelessClient(Client):
    era = "stateless"

    def __init__(self, load: RollingLoad, name: str) -> None:
        super().__init__(load, name)
        self.listen_open = False
        self.listen_up = asyncio.Event()
        self.reopened = 0
        self.sent_while_listening = 0

    def listening(self) -> bool:
        return self.listen_open

    def touched(self, while_listening: bool) -> None:
        self.sent_while_listening += while_listening

    def request(self, method: str, params: JSON, *, token: str | None = None,
                capabilities: JSON | None = None) -> tuple[int, str, dict[str, str]]:
        """(id, body, headers) of a 2026-07-28 request."""
        rid = next(self.ids)
        meta: JSON = {META_VERSION: STATELESS, META_CAPABILITIES: capabilities or {}, META_CLIENT_INFO: CLIENT_INFO}
        if token is not None:
            meta["progressToken"] = token
        body = {"jsonrpc": "2.0", "id": rid, "method": method, "params": {**params, "_meta": meta}}
        headers = {"accept": ACCEPT_BOTH, "content-type": "application/json", "mcp-protocol-version": STATELESS,
                   "mcp-method": method}
        name = params.get("taskId") if method.startswith("tasks/") else params.get("name") or params.get("uri")
        if isinstance(name, str):
            headers["mcp-name"] = name
        return rid, json.dumps(body), headers

    async def call(self, op: Op, method: str, params: JSON, *, token: str | None = None) -> tuple[JSON, Exchange]:
        """``tasks/*`` declare the tasks extension, as the request that made the task did."""
        return await self.call_with(op, method, params, token=token,
                                    capabilities=WITH_TASKS if method.startswith("tasks/") else None)

    async def call_with(self, op: Op, method: str, params: JSON, *, token: str | None = None,
                        capabilities: JSON | None = None) -> tuple[JSON, Exchange]:
        """One stateless request; a broken stream cannot be resumed in this era: the request failed."""
        async def attempt() -> tuple[JSON, Exchange]:
            rid, body, headers = self.request(method, params, token=token, capabilities=capabilities)
            exchange = Exchange(rid, token)
            answering = False
            try:
                async with self.http.stream("POST", self.url, content=body, headers=headers) as r:
                    self.tally.http_requests += 1
                    await expect_status(r)
                    answering = True
                    await read_answer(r, exchange, None)
            except httpx.TransportError as exc:
                if exchange.answer is None:
                    raise Failed(f"connection: {type(exc).__name__}", str(exc), missing=answering) from None
            if exchange.answer is None:
                raise Failed("stream ended without an answer", exchange.story(), missing=True)
            self.tally.kind(op.kind).duplicated += max(0, exchange.answers - 1)
            self.tally.unexpected += exchange.unexpected
            return exchange.result(), exchange
        return await self.retrying(op, attempt)

    async def task(self, op: Op) -> None:
        ms = self.rng.randint(*self.options.job_ms)
        created, _ = await self.call_with(op, "tools/call", {"name": "job", "arguments": {"ms": ms}},
                                          capabilities=WITH_TASKS)
        if created.get("resultType") != "task" or "taskId" not in created:
            raise Failed("no task", json.dumps(created)[:200])
        self.tally.tasks_created += 1
        state = await self.poll_task(op, created["taskId"], created.get("pollIntervalMs"))
        if state["status"] != "completed":
            raise Failed(f"task {state['status']}", str(state.get("statusMessage")))
        if text_of(state.get("result") or {}) != f"job: {ms} ms":
            raise Failed("wrong task result", json.dumps(state)[:200])
        self.tally.tasks_completed += 1

    # the subscriptions/listen stream
    async def ready(self) -> None:
        await self.listen_up.wait()

    async def streams(self) -> None:
        timeout = httpx.Timeout(self.options.stream_read_timeout, connect=5.0)
        while not self.load.closing.is_set():
            stats = self.tally.kind("stateless/listen")
            stats.sent += 1
            rid, body, headers = self.request("subscriptions/listen",
                                              {"notifications": {"resourceSubscriptions": [self.uri]}})
            ending, pause = "answered", 0.0
            try:
                async with self.http.stream("POST", self.url, content=body, headers=headers, timeout=timeout) as r:
                    self.tally.http_requests += 1
                    after = retry_after(r)
                    if after is not None:
                        await r.aread()
                        stats.ok += 1
                        stats.retried += 1
                        self.tally.retries["stateless/listen: http 503"] += 1
                        ending, pause = "503", min(after, self.options.retry_after_cap)
                    elif r.status_code != 200:
                        text = (await r.aread())[:200].decode("utf-8", "replace")
                        stats.failed += 1
                        self.tally.fail("stateless/listen", f"http {r.status_code}", text, self.name)
                        ending, pause = f"http {r.status_code}", 0.5
                    else:
                        stats.ok += 1
                        ending = await self._listen(r, rid)
            except httpx.TransportError as exc:
                ending = type(exc).__name__
            finally:
                self.listen_open = False
            if self.load.closing.is_set():
                break
            self.log(f"listen #{self.reopened + 1} {ending}")
            self.reopened += 1
            self.tally.listen_endings[ending] += 1
            if pause:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.load.closing.wait(), pause)  # as the server asked

    async def _listen(self, response: httpx.Response, rid: int) -> str:
        async for event in sse_events(response):
            message = event.message
            if not isinstance(message, dict):
                continue
            method = message.get("method")
            params = message.get("params") or {}
            if method == ACKNOWLEDGED:
                self.listen_open = True
                self.listen_up.set()
                self.log(f"listen #{self.reopened + 1} open")
            elif method == UPDATED and params.get("uri") == self.uri \
                    and (params.get("_meta") or {}).get(SUBSCRIPTION_ID) == rid:
                self.received += 1
                await self.tally.poke()
            elif message.get("id") == rid:
                return "answered"
            else:
                self.tally.unexpected += 1
        return "ended"


class BurstClient(StatelessClient):
    """Stateless ``echo`` calls from many loops at once (``RollingLoad.burst``), counted apart."""

    era = "burst"

