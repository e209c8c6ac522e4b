"""Continuous MCP load through a balancer, in both protocol eras, counting exactly what a rolling upgrade (or a
Redis restart) costs the clients: the load of ``tests/e2e/test_rolling_upgrade.py``, ``tests/e2e/test_soak.py``
and ``bench/soak.py``, against ``tests.support.rolling_server:server``.

    load = RollingLoad(url, LoadOptions(handshake_clients=4, stateless_clients=4))
    await load.start()          # every client connected, subscribed, listening
    ...                         # replace replicas, restart Redis
    report = await load.stop()  # bounded: outstanding notifications are waited for, then everything closes
    print(report.render()); print(report.verdict)

Handshake-era clients (2025-11-25, one session each): ``initialize`` + ``notifications/initialized``,
``resources/subscribe`` to the client's own ``rolling://watch/<name>``, a GET stream kept open and, whenever it
ends or breaks, resumed with ``Last-Event-ID`` (after the server's ``retry``) on whatever replica the balancer
picks; then, in a loop: ``echo``, ``slow`` (progress notifications, each of which must arrive exactly once,
even when the response stream breaks and is resumed by GET with ``Last-Event-ID``), and ``job`` as a task
(created, polled with ``tasks/get`` until terminal, ``tasks/result``).

Stateless clients (2026-07-28, no session): ``echo``, ``slow`` with progress, ``job`` through the tasks
extension (polled with ``tasks/get``), and a ``subscriptions/listen`` stream on the client's own resource,
reopened whenever it ends (counted; what is touched while it is closed is legitimately never delivered in
this era: reported, not counted as lost).

Every client has a notifier beside it: ``touch`` of the client's resource (a stateless call), one at a time,
each followed by a bounded wait for its ``notifications/resources/updated``. Every acknowledged touch must
come out exactly once on a handshake-era session's GET stream.

What counts (``Report``): a request **failed** when its answer is an HTTP status other than the expected one,
a connection error or reset (a POST's stream that breaks after an event id is resumed instead, as the
protocol says), a JSON-RPC error, or no answer at all (**missing**); a 503 with ``Retry-After`` and a
JSON-RPC error marked ``data.retryable`` (the drain's cut-off) are retried, bounded, and a request that then
succeeds is **retried**, not failed. Events are **lost** when a stream's event numbers (``<stream>_<seq>``)
skip one and **duplicated** when one comes twice; progress likewise by its counter. Notifications are lost
when fewer arrive than touches were acknowledged.

The load is split by concept: ``bench/rolling_counts.py`` (the counts, ``Report`` and its verdict),
``bench/rolling_http.py`` (MCP over HTTP and SSE), ``bench/rolling_client.py`` (what both eras' clients
share), ``bench/rolling_handshake_client.py``, ``bench/rolling_stateless_client.py``; this module holds
``LoadOptions`` and ``RollingLoad``, which runs them, and is the one to import from.

Only the standard library and httpx are used.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass

import httpx

from bench.rolling_client import Client
from bench.rolling_counts import KindStats, Op, Report, Tally
from bench.rolling_handshake_client import HandshakeClient
from bench.rolling_http import (
    ACCEPT_BOTH,
    CLIENT_INFO,
    META_CAPABILITIES,
    META_CLIENT_INFO,
    META_VERSION,
    STATELESS,
    Exchange,
    Failed,
    expect_status,
    read_answer,
    text_of,
)
from bench.rolling_stateless_client import BurstClient, StatelessClient

__all__ = ["BurstClient", "Client", "HandshakeClient", "KindStats", "LoadOptions", "Report", "RollingLoad",
           "StatelessClient"]


@dataclass(frozen=True)
class LoadOptions:
    handshake_clients: int = 4
    stateless_clients: int = 4
    slow_steps: tuple[int, int] = (4, 10)
    """Progress notifications per ``slow`` call (drawn in this range)."""
    slow_interval_ms: int = 150
    job_ms: tuple[int, int] = (1000, 2000)
    """How long each task runs (drawn in this range)."""
    touch_pause: float = 0.2
    """Seconds between one touch's notification (or its bound) and the next touch."""
    notification_bound: float = 6.0
    """Seconds a touch's notification may take before it is reported late (it may still come)."""
    retry_limit: int = 60
    """Retries of one request answered 503 with ``Retry-After`` (or a retryable error), at most."""
    retry_after_cap: float = 2.0
    """The longest ``Retry-After`` honoured as such (longer ones are waited this long)."""
    resume_limit: int = 10
    """Resumptions (GET with ``Last-Event-ID``) of one request's stream, at most."""
    request_timeout: float = 30.0
    stream_read_timeout: float = 45.0
    """Silence after which a GET or listen stream is taken for dead (the server sends keep-alives)."""
    task_bound: float = 30.0
    """Seconds a task may stay working before it counts as not finished."""
    seed: int = 1


class RollingLoad:
    """``options.handshake_clients`` + ``options.stateless_clients`` clients against ``url`` until ``stop``."""

    def __init__(self, url: str, options: LoadOptions | None = None) -> None:
        self.url = url
        self.options = options or LoadOptions()
        self.tally = Tally()
        self.stopping = asyncio.Event()
        """Set by ``stop``: no new operation or touch starts."""
        self.closing = asyncio.Event()
        """Set by ``stop`` once notifications are in: the streams close."""
        self.handshake = [HandshakeClient(self, f"h{i}") for i in range(self.options.handshake_clients)]
        self.stateless = [StatelessClient(self, f"s{i}") for i in range(self.options.stateless_clients)]
        self.notifier_http = httpx.AsyncClient(timeout=httpx.Timeout(self.options.request_timeout, connect=5.0))
        self._work: list[asyncio.Task[None]] = []
        self._streams: list[asyncio.Task[None]] = []
        self._touch_ids = itertools.count(1)
        self.burster = BurstClient(self, "b")

    @property
    def clients(self) -> list[Client]:
        return [*self.handshake, *self.stateless]

    async def start(self, bound: float = 30.0) -> None:
        """Connect every client (sessions, subscriptions, streams), then start the load."""
        async with asyncio.timeout(bound):
            setups = await asyncio.gather(*(c.setup() for c in self.handshake))
            if not all(setups):
                raise RuntimeError("a handshake-era client could not start:\n" + "\n".join(self.tally.samples))
            self._streams = [asyncio.create_task(c.streams(), name=f"{c.name}-stream") for c in self.clients]
            await asyncio.gather(*(c.ready() for c in self.clients))
        self.tally.running_since = time.monotonic()
        self._work = [asyncio.create_task(work, name=name) for c in self.clients
                      for work, name in ((c.operations(), f"{c.name}-ops"), (c.notifier(), f"{c.name}-touch"))]

    async def until(self, condition: Callable[[], bool], bound: float) -> bool:
        """Wait (bounded) until ``condition`` holds, re-checked at each notification or operation done."""
        try:
            async with self.tally.changed:
                await asyncio.wait_for(self.tally.changed.wait_for(condition), bound)
        except TimeoutError:
            return condition()
        return True

    def in_flight(self) -> dict[str, int]:
        """The operations under way now, by kind (what a replica stopping now has to finish or hand over)."""
        return {kind: n for kind, n in sorted(self.tally.running.items()) if n}

    async def progressed(self, operations: int, bound: float = 30.0) -> bool:
        """Wait (bounded) until ``operations`` more operations have ended (whatever their outcome)."""
        target = self.tally.ops_done + operations
        return await self.until(lambda: self.tally.ops_done >= target, bound)

    async def burst(self, seconds: float = 1.5, concurrency: int = 16) -> None:
        """``echo`` calls from ``concurrency`` loops at once for ``seconds``, each sent as soon as the one before
        is answered (kind ``burst/echo``): many requests on nginx's kept-alive connections to the replicas, for
        the moment one of them starts draining (a request written on a connection that the replica is closing
        gets a 502 from nginx, which does not send a POST twice)."""
        end = time.monotonic() + seconds

        async def calls() -> None:
            while time.monotonic() < end and not self.stopping.is_set():
                await self.burster.run("echo", self.burster.echo)

        await asyncio.gather(*(calls() for _ in range(concurrency)))

    async def touch(self, client: Client) -> bool:
        """``touch`` of ``client``'s resource, a stateless call; True once acknowledged."""
        async def work(op: Op) -> None:
            async def attempt() -> None:
                rid = next(self._touch_ids)
                meta = {META_VERSION: STATELESS, META_CAPABILITIES: {}, META_CLIENT_INFO: CLIENT_INFO}
                body = {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                        "params": {"name": "touch", "arguments": {"uri": client.uri}, "_meta": meta}}
                headers = {"accept": ACCEPT_BOTH, "content-type": "application/json",
                           "mcp-protocol-version": STATELESS, "mcp-method": "tools/call", "mcp-name": "touch"}
                exchange = Exchange(rid)
                try:
                    async with self.notifier_http.stream("POST", self.url, content=json.dumps(body),
                                                         headers=headers) as r:
                        self.tally.http_requests += 1
                        await expect_status(r)
                        await read_answer(r, exchange, None)
                except httpx.TransportError as exc:
                    raise Failed(f"connection: {type(exc).__name__}", str(exc), missing=True) from None
                if exchange.answer is None:
                    raise Failed("no answer", missing=True)
                client.touched_on = text_of(exchange.result()).rpartition(" on ")[2]
            await client.retrying(op, attempt)
        return await client.run("touch", work)

    def report(self) -> Report:
        tally = self.tally
        handshake, stateless = self.handshake, self.stateless
        return Report(
            seconds=time.monotonic() - tally.running_since, http_requests=tally.http_requests,
            kinds={k: KindStats(**vars(v)) for k, v in tally.kinds.items()},
            failures=dict(tally.failures), failure_samples=list(tally.samples), retries=dict(tally.retries),
            events_lost=sum(c.ledger.lost() for c in handshake),
            events_duplicated=sum(c.ledger.duplicated for c in handshake),
            progress_lost=tally.progress_lost, progress_duplicated=tally.progress_duplicated,
            notifications_sent=sum(c.acked for c in handshake),
            notifications_received=sum(c.received for c in handshake),
            notifications_lost=sum(max(0, c.acked - c.received) for c in handshake),
            notifications_duplicated=sum(max(0, c.received - c.acked - c.failed_touches) for c in handshake),
            notifications_ambiguous=sum(c.failed_touches for c in handshake), notes=list(tally.notes),
            histories={c.name: list(c.history) for c in self.clients
                       if c.troubled or (isinstance(c, HandshakeClient) and c.received != c.acked)},
            clients=[f"{c.name} {c.acked}/{c.received}" + (f" GET x{c.get_reconnects}" if isinstance(c, HandshakeClient) else "")
                     for c in self.clients],
            stateless_sent=sum(c.acked for c in stateless),
            stateless_sent_while_listening=sum(c.sent_while_listening for c in stateless),
            stateless_received=sum(c.received for c in stateless),
            listen_reopened=sum(c.reopened for c in stateless), listen_endings=dict(tally.listen_endings),
            get_reconnects=sum(c.get_reconnects for c in handshake), get_endings=dict(tally.get_endings),
            post_resumptions=tally.post_resumptions, tasks_created=tally.tasks_created,
            tasks_completed=tally.tasks_completed, unexpected_messages=tally.unexpected)

    async def stop(self, bound: float = 30.0) -> Report:
        """Stop starting operations and touches; let those under way end; wait until every acknowledged touch
        has had its notification on the handshake-era sessions; then close every stream. Each wait is bounded
        (``bound`` seconds): what has not come by then is counted as it stands."""
        self.stopping.set()
        if self._work:
            _, pending = await asyncio.wait(self._work, timeout=bound)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
        elapsed = time.monotonic() - self.tally.running_since
        live = [c for c in self.handshake if not c.dead]
        await self.until(lambda: all(c.received >= c.acked for c in live), min(bound, self.options.notification_bound))
        self.closing.set()
        for task in self._streams:
            task.cancel()
        await asyncio.gather(*self._streams, return_exceptions=True)
        for client in [*self.clients, self.burster]:
            await client.close()
        await self.notifier_http.aclose()
        report = self.report()
        report.seconds = elapsed
        return report
