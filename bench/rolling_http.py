"""MCP over HTTP as the rolling load's clients speak it (``bench/rolling_load.py``): the protocol's names, an
SSE response's events, one request's answer as it comes (``Exchange``, on a JSON body or an SSE stream and its
resumptions), and what an answer can say instead: ``Failed``, or ``Retry`` (send the request again).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx

from bench.rolling_counts import Ledger

HANDSHAKE = "2025-11-25"
STATELESS = "2026-07-28"
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
UPDATED = "notifications/resources/updated"
PROGRESS = "notifications/progress"
ACCEPT_BOTH = "application/json, text/event-stream"
CLIENT_INFO = {"name": "wiremcp-rolling-load", "version": "0"}
TERMINAL = frozenset({"completed", "failed", "cancelled"})
WITH_TASKS: dict[str, Any] = {"extensions": {TASKS_EXTENSION: {}}}
"""The client capabilities of a stateless request that takes a task (the 2026-07-28 tasks extension)."""
WATCH = "rolling://watch/{name}"
"""The resource template of ``tests.support.rolling_server``."""

JSON = dict[str, Any]


class Failed(Exception):
    """An operation failed: ``reason`` is its class (``http 502``), ``detail`` the particulars."""

    def __init__(self, reason: str, detail: str = "", *, missing: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.detail = detail
        self.missing = missing


class Retry(Exception):
    """The server said to send the request again, after ``after`` seconds."""

    def __init__(self, after: float, reason: str) -> None:
        super().__init__(reason)
        self.after = after
        self.reason = reason


@dataclass
class Event:
    id: str | None = None
    data: str | None = None
    retry: int | None = None

    @property
    def message(self) -> Any:
        return json.loads(self.data) if self.data else None


async def sse_events(response: httpx.Response) -> AsyncIterator[Event]:
    """The events of an SSE response as they come (comments skipped)."""
    event, seen = Event(), False
    async for raw in response.aiter_lines():
        line = raw.rstrip("\r\n")
        if not line:
            if seen:
                yield event
            event, seen = Event(), False
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        seen = True
        if name == "id":
            event.id = value
        elif name == "data":
            event.data = value if event.data is None else event.data + "\n" + value
        elif name == "retry" and value.isdigit():
            event.retry = int(value)


def retry_after(response: httpx.Response) -> float | None:
    """A 503's ``Retry-After`` in seconds, or None (another status, or none given)."""
    value = response.headers.get("retry-after")
    if response.status_code != 503 or value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return 1.0


async def expect_status(response: httpx.Response, expected: int = 200) -> None:
    """Raise ``Retry`` for a 503 with ``Retry-After``, ``Failed`` for any other unexpected status."""
    if response.status_code == expected:
        return
    body = (await response.aread())[:300].decode("utf-8", "replace")
    after = retry_after(response)
    if after is not None:
        raise Retry(after, "http 503")
    raise Failed(f"http {response.status_code}", body)


@dataclass
class Exchange:
    """One request's answer as it comes: on a JSON body, or on an SSE stream (and its resumptions)."""

    rid: int
    token: str | None = None
    answer: JSON | None = None
    answers: int = 0
    progress: list[float] = field(default_factory=list)
    last_id: str | None = None
    retry_ms: int = 1000
    unexpected: int = 0
    seen: list[str] = field(default_factory=list)
    """What came, in short (for the report of a request that went wrong)."""

    def take(self, message: Any) -> None:
        self.seen.append(json.dumps(message)[:160])
        if len(self.seen) > 6:
            del self.seen[1:-5]  # the first (how the answer began) and the last five
        if not isinstance(message, dict):
            self.unexpected += 1
        elif message.get("id") == self.rid and ("result" in message or "error" in message):
            self.answers += 1
            if self.answer is None:
                self.answer = message
        elif message.get("method") == PROGRESS and (message.get("params") or {}).get("progressToken") == self.token:
            self.progress.append(message["params"]["progress"])
        else:
            self.unexpected += 1

    def story(self) -> str:
        return " | ".join(self.seen)

    def result(self) -> JSON:
        """The result; ``Retry`` for a retryable error (the drain's cut-off), ``Failed`` for another."""
        assert self.answer is not None
        error = self.answer.get("error")
        if error is not None:
            data = error.get("data")
            if isinstance(data, dict) and data.get("retryable") is True:
                raise Retry(0.5, f"retryable {error.get('code')}")
            raise Failed(f"jsonrpc {error.get('code')}", str(error.get("message")))
        result = self.answer.get("result")
        if not isinstance(result, dict):
            raise Failed("no result", json.dumps(self.answer)[:200])
        return result


async def read_answer(response: httpx.Response, exchange: Exchange, ledger: Ledger | None) -> None:
    """Feed a JSON or SSE answer into ``exchange`` (events numbered by ``ledger``, duplicates skipped)."""
    kind = response.headers.get("content-type", "")
    exchange.seen.append(f"HTTP {response.status_code} {kind}")
    if kind.startswith("application/json"):
        exchange.take(json.loads(await response.aread()))
    elif kind.startswith("text/event-stream"):
        async for event in sse_events(response):
            if event.retry is not None:
                exchange.retry_ms = event.retry
            if event.id is not None:
                if ledger is not None and not ledger.record(event.id):
                    continue
                exchange.last_id = event.id
            if event.data:
                exchange.take(event.message)
    else:
        raise Failed(f"content-type {kind or 'none'}", (await response.aread())[:200].decode("utf-8", "replace"))


def text_of(result: JSON) -> str:
    content = result.get("content") or [{}]
    return str(content[0].get("text"))

