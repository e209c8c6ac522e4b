"""Rate limits: a built-in middleware (``RateLimit``) that gives each caller a token bucket per rule, and
optionally caps how many tool calls a caller runs at once.

Who a caller is: its principal (``Principal.key``) when authentication established one; without one, its
handshake-era session (``by="session"``) or its address over HTTP (``by="peer"``), whichever ``by`` names
first and the message has; on stdio without authentication, the one local client. A request over the limit
is refused with ``RateLimited`` (-32023, ``data.retryAfterMs``: the draft SEP-3304), which HTTP answers with
429 and ``Retry-After``; nothing else is slowed (each caller has its own bucket, and a refusal is answered at
once).

The buckets live in a ``RateLimitStore``: the backend's (``Runtime.backend.rate_limits``: in memory, or shared
by the replicas through Redis when the deployment has ``WIREMCP_REDIS_URL``), or one given to the rule.
"""

from __future__ import annotations

import hashlib
import math
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

from wiremcp.errors import RateLimited
from wiremcp.middleware import Call, CallNext
from wiremcp.types import JSONObject

By = Literal["principal", "session", "peer"]


@dataclass(frozen=True, slots=True)
class Taken:
    """What a bucket said: whether the request may go, and if not, in how many seconds one token is back."""

    allowed: bool
    remaining: int
    retry_after: float = 0.0


class RateLimitStore(ABC):
    """Where the buckets and the counts of calls running are kept; every operation is atomic (replicas that
    share a store cannot both take the last token)."""

    @abstractmethod
    async def take(self, key: str, rate: float, burst: int) -> Taken:
        """Take one token from the bucket ``key`` (``rate`` tokens a second, at most ``burst``; a new bucket
        is full)."""

    @abstractmethod
    async def enter(self, key: str, limit: int) -> bool:
        """Count one more call running under ``key``, if fewer than ``limit`` are; whether it was counted."""

    @abstractmethod
    async def leave(self, key: str) -> None:
        """One call counted by ``enter`` ended."""


class InMemoryRateLimits(RateLimitStore):
    """Buckets in this process (one replica). At most ``max_keys`` buckets are kept; past that the one used
    least recently is forgotten (it comes back full)."""

    def __init__(self, *, max_keys: int = 100_000, clock: Callable[[], float] = time.monotonic) -> None:
        self._buckets: dict[str, tuple[float, float]] = {}
        self._running: dict[str, int] = {}
        self._max_keys = max_keys
        self._clock = clock

    async def take(self, key: str, rate: float, burst: int) -> Taken:
        now = self._clock()
        tokens, last = self._buckets.pop(key, (float(burst), now))
        tokens = min(float(burst), tokens + (now - last) * rate)
        allowed = tokens >= 1.0
        if allowed:
            tokens -= 1.0
        if len(self._buckets) >= self._max_keys:
            del self._buckets[next(iter(self._buckets))]
        self._buckets[key] = (tokens, now)  # (re)inserted last: the dict's order is least recently used first
        return Taken(allowed, int(tokens), 0.0 if allowed else (1.0 - tokens) / rate)

    async def enter(self, key: str, limit: int) -> bool:
        running = self._running.get(key, 0)
        if running >= limit:
            return False
        self._running[key] = running + 1
        return True

    async def leave(self, key: str) -> None:
        running = self._running.get(key, 0) - 1
        if running > 0:
            self._running[key] = running
        else:
            self._running.pop(key, None)


class RateLimit:
    """A middleware: each caller may send ``rate`` requests every ``per`` seconds, ``burst`` at once (default:
    ``rate``, at least 1), of the ``methods`` named (default: every request); with ``tools``, only the
    ``tools/call`` of those tools count. ``each_tool``: a bucket per tool rather than one for them all (a
    name the server has no tool of counts in one bucket for them all: what clients send must not make
    buckets without end).
    ``concurrent``: at most this many ``tools/call`` of one caller run at once (a task-augmented call counts
    until its task is created). ``by``: who a caller is without a principal (see the module). ``store``: where
    the buckets are (default: the runtime's). ``name``: the rule's name in the store's keys (default: one
    made from the settings, the same on every replica)."""

    def __init__(self, rate: float, *, per: float = 1.0, burst: int | None = None,
                 methods: Iterable[str] | None = None, tools: Iterable[str] | None = None, each_tool: bool = False,
                 concurrent: int | None = None, by: By = "principal", store: RateLimitStore | None = None,
                 name: str | None = None) -> None:
        if rate <= 0 or per <= 0:
            raise ValueError("RateLimit: rate and per must be positive")
        if (burst is not None and burst < 1) or (concurrent is not None and concurrent < 1):
            raise ValueError("RateLimit: burst and concurrent must be at least 1")
        if by not in ("principal", "session", "peer"):
            raise ValueError("RateLimit: by must be 'principal', 'session' or 'peer'")
        self.rate = rate / per
        """Tokens a second."""
        self.burst = burst if burst is not None else max(1, math.ceil(rate))
        self.methods = frozenset(methods) if methods is not None else None
        self.tools = frozenset(tools) if tools is not None else None
        self.each_tool = each_tool
        self.concurrent = concurrent
        self.by = by
        self.store = store
        settings = (sorted(self.methods or ()), sorted(self.tools or ()), each_tool, rate, per, self.burst, by,
                    concurrent)
        self.name = name or "r" + hashlib.sha256(repr(settings).encode()).hexdigest()[:12]

    def applies(self, call: Call) -> bool:
        if call.notification or (self.methods is not None and call.method not in self.methods):
            return False
        return self.tools is None or (call.method == "tools/call" and call.name in self.tools)

    def caller(self, call: Call) -> str:
        """Who ``call`` comes from, as this rule counts callers."""
        if call.principal is not None:
            return "p:" + call.principal.key
        session_id = call.session.state.id if call.session is not None else None
        order = (("s", session_id), ("a", call.peer)) if self.by == "session" else (("a", call.peer), ("s", session_id))
        for kind, value in order:
            if value:
                return f"{kind}:{value}"
        return "local"

    async def __call__(self, call: Call, call_next: CallNext) -> JSONObject | None:
        if not self.applies(call):
            return await call_next()
        store = self.store or call.runtime.backend.rate_limits
        who = self.caller(call)
        key = f"{self.name}|{who}"
        if self.each_tool and call.method == "tools/call":
            key += f"|{call.name}" if call.component is not None else "|?"
        taken = await store.take(key, self.rate, self.burst)
        if not taken.allowed:
            raise RateLimited(taken.retry_after, limit=self.burst, remaining=0)
        if self.concurrent is None or call.method != "tools/call":
            return await call_next()
        running = f"{self.name}|running|{who}"
        if not await store.enter(running, self.concurrent):
            raise RateLimited(1.0, message=f"Rate limited: at most {self.concurrent} tool calls at once")
        try:
            return await call_next()
        finally:
            await store.leave(running)
