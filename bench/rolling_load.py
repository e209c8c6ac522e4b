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

Only the standard library and httpx are used.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import random
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx

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
SAMPLES = 40
"""How many failures (and late notifications) the report quotes in full."""

T = TypeVar("T")
JSON = dict[str, Any]


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


# -- counting ----------------------------------------------------------------------------------------------------
@dataclass
class KindStats:
    """The operations of one kind (``handshake/slow``, ``stateless/task``, ``touch``...)."""

    sent: int = 0
    ok: int = 0
    retried: int = 0
    """Of ``ok``: those that needed a retry (503 with Retry-After, or a retryable error) first."""
    failed: int = 0
    missing: int = 0
    """Of ``failed``: no answer ever came."""
    duplicated: int = 0
    """Answers that came more than once."""


@dataclass
class Report:
    """What the load saw, and its verdict."""

    seconds: float
    http_requests: int
    kinds: dict[str, KindStats]
    failures: dict[str, int]
    """``kind: reason`` -> count."""
    failure_samples: list[str]
    retries: dict[str, int]
    """``kind: reason`` -> how many times a request was sent again."""
    events_lost: int
    events_duplicated: int
    progress_lost: int
    progress_duplicated: int
    notifications_sent: int
    """Handshake era: touches acknowledged."""
    notifications_received: int
    notifications_lost: int
    notifications_duplicated: int
    notifications_ambiguous: int
    """Touches whose request failed: the server may or may not have sent their notification."""
    notes: list[str]
    """Late notifications, progress out of order: what the counts do not say."""
    clients: list[str]
    """One line per client: its touches, notifications and stream reopenings."""
    histories: dict[str, list[str]]
    """The stream history of each client something went wrong for."""
    stateless_sent: int
    stateless_sent_while_listening: int
    stateless_received: int
    listen_reopened: int
    listen_endings: dict[str, int]
    get_reconnects: int
    get_endings: dict[str, int]
    post_resumptions: int
    tasks_created: int
    tasks_completed: int
    unexpected_messages: int

    @property
    def failed(self) -> int:
        return sum(k.failed for k in self.kinds.values())

    @property
    def retried(self) -> int:
        return sum(k.retried for k in self.kinds.values())

    @property
    def missing_answers(self) -> int:
        return sum(k.missing for k in self.kinds.values())

    @property
    def duplicated_answers(self) -> int:
        return sum(k.duplicated for k in self.kinds.values())

    @property
    def tasks_unfinished(self) -> int:
        return self.tasks_created - self.tasks_completed

    @property
    def stateless_missed(self) -> int:
        return max(0, self.stateless_sent - self.stateless_received)

    @property
    def requests_per_second(self) -> float:
        return self.http_requests / self.seconds if self.seconds > 0 else 0.0

    def problems(self) -> list[str]:
        """Everything that makes the run a failure, one phrase each."""
        out = []
        if self.failed:
            top = ", ".join(f"{reason} x{n}" for reason, n in sorted(self.failures.items(), key=lambda i: -i[1])[:4])
            out.append(f"{self.failed} failed requests ({top})")
        for count, what in ((self.missing_answers, "missing answers"), (self.duplicated_answers, "duplicated answers"),
                            (self.events_lost, "lost events"), (self.events_duplicated, "duplicated events"),
                            (self.progress_lost, "lost progress notifications"),
                            (self.progress_duplicated, "duplicated progress notifications"),
                            (self.notifications_lost, "lost resource notifications"),
                            (self.notifications_duplicated, "duplicated resource notifications"),
                            (self.tasks_unfinished, "unfinished tasks")):
            if count:
                out.append(f"{count} {what}")
        return out

    @property
    def passed(self) -> bool:
        return not self.problems()

    @property
    def verdict(self) -> str:
        problems = self.problems()
        if problems:
            return "FAIL: " + "; ".join(problems)
        return (f"PASS: {self.http_requests} requests in {self.seconds:.0f}s, 0 failed ({self.retried} retried), "
                f"0 lost or duplicated events, {self.notifications_received}/{self.notifications_sent} notifications, "
                f"{self.tasks_completed}/{self.tasks_created} tasks")

    def render(self) -> str:
        lines = [f"{self.seconds:.1f}s, {self.http_requests} HTTP requests ({self.requests_per_second:.1f}/s)",
                 f"{'kind':<22}{'sent':>7}{'ok':>7}{'retried':>9}{'failed':>8}{'missing':>9}{'dup':>5}"]
        for kind, k in sorted(self.kinds.items()):
            lines.append(f"{kind:<22}{k.sent:>7}{k.ok:>7}{k.retried:>9}{k.failed:>8}{k.missing:>9}{k.duplicated:>5}")
        lines.append(f"events: lost {self.events_lost}, duplicated {self.events_duplicated}; progress: lost "
                     f"{self.progress_lost}, duplicated {self.progress_duplicated}")
        lines.append(f"resource notifications (handshake era): {self.notifications_sent} sent, "
                     f"{self.notifications_received} received, {self.notifications_lost} lost, "
                     f"{self.notifications_duplicated} duplicated, {self.notifications_ambiguous} touches failed")
        lines.append(f"resource notifications (stateless era, reported only): {self.stateless_sent} sent "
                     f"({self.stateless_sent_while_listening} while listening), {self.stateless_received} received, "
                     f"{self.stateless_missed} missed")
        lines.append(f"tasks: {self.tasks_created} created, {self.tasks_completed} completed, "
                     f"{self.tasks_unfinished} not finished")
        lines.append(f"streams: GET reconnected {self.get_reconnects}x {dict(self.get_endings)}; POST streams resumed "
                     f"{self.post_resumptions}x; listen reopened {self.listen_reopened}x {dict(self.listen_endings)}")
        if self.retries:
            lines.append("retried: " + ", ".join(f"{r} x{n}" for r, n in sorted(self.retries.items())))
        if self.failures:
            lines.append("failures: " + ", ".join(f"{r} x{n}" for r, n in sorted(self.failures.items())))
            lines.extend(f"  {sample}" for sample in self.failure_samples)
        lines.append("clients: " + "; ".join(self.clients))
        if self.notes:
            lines.append("notes:")
            lines.extend(f"  {note}" for note in self.notes)
        for name, history in self.histories.items():
            lines.append(f"history of {name}:")
            lines.extend(f"  {entry}" for entry in history)
        if self.unexpected_messages:
            lines.append(f"unexpected messages: {self.unexpected_messages}")
        return "\n".join(lines)


class Failed(Exception):
    """An operation failed: ``reason`` is its class (``http 502``), ``detail`` the particulars."""

    def __init__(self, reason: str, detail: str = "", *, missing: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.detail = detail
        self.missing = missing


class _Retry(Exception):
    """The server said to send the request again, after ``after`` seconds."""

    def __init__(self, after: float, reason: str) -> None:
        super().__init__(reason)
        self.after = after
        self.reason = reason


class Ledger:
    """The event ids one client has seen, per stream: a repeated one is a duplicate, a skipped number a loss."""

    def __init__(self) -> None:
        self.seqs: dict[str, set[int]] = {}
        self.duplicated = 0

    def record(self, event_id: str) -> bool:
        """False for an id seen before (counted as a duplicate)."""
        stream, _, seq = event_id.rpartition("_")
        if not stream or not seq.isdigit():
            return True  # not an id of ours to number
        seen = self.seqs.setdefault(stream, set())
        if int(seq) in seen:
            self.duplicated += 1
            return False
        seen.add(int(seq))
        return True

    def lost(self) -> int:
        """Numbers skipped between the first and the last event seen of each stream."""
        return sum(max(s) - min(s) + 1 - len(s) for s in self.seqs.values() if s)


class Tally:
    """Every count of one load, shared by its clients."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        """The origin of every ``t=`` in the notes (the clients start connecting)."""
        self.running_since = self.started
        """When the load proper began (every client connected): what requests per second are over."""
        self.kinds: dict[str, KindStats] = {}
        self.failures: Counter[str] = Counter()
        self.samples: list[str] = []
        self.retries: Counter[str] = Counter()
        self.http_requests = 0
        self.progress_lost = 0
        self.progress_duplicated = 0
        self.post_resumptions = 0
        self.get_endings: Counter[str] = Counter()
        self.listen_endings: Counter[str] = Counter()
        self.tasks_created = 0
        self.tasks_completed = 0
        self.unexpected = 0
        self.ops_done = 0
        self.running: Counter[str] = Counter()
        """Operations under way now, by kind."""
        self.notes: list[str] = []
        self.changed = asyncio.Condition()
        """Notified at every notification received and every operation done."""

    def kind(self, kind: str) -> KindStats:
        return self.kinds.setdefault(kind, KindStats())

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def fail(self, kind: str, reason: str, detail: str = "", who: str = "") -> None:
        self.failures[f"{kind}: {reason}"] += 1
        if len(self.samples) < SAMPLES:
            self.samples.append(f"t={self.elapsed():6.1f}s {who} {kind}: {reason} {detail[:200]}".rstrip())

    def note(self, text: str) -> None:
        """Something the report should quote (a late notification, progress out of order)."""
        if len(self.notes) < SAMPLES:
            self.notes.append(f"t={self.elapsed():6.1f}s {text}")

    async def poke(self) -> None:
        async with self.changed:
            self.changed.notify_all()


@dataclass
class Op:
    """One operation under way: its kind, whether it needed a retry, and who runs it."""

    kind: str
    who: str
    retried: bool = False


# -- HTTP and SSE ------------------------------------------------------------------------------------------------
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
    """Raise ``_Retry`` for a 503 with ``Retry-After``, ``Failed`` for any other unexpected status."""
    if response.status_code == expected:
        return
    body = (await response.aread())[:300].decode("utf-8", "replace")
    after = retry_after(response)
    if after is not None:
        raise _Retry(after, "http 503")
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
        """The result; ``_Retry`` for a retryable error (the drain's cut-off), ``Failed`` for another."""
        assert self.answer is not None
        error = self.answer.get("error")
        if error is not None:
            data = error.get("data")
            if isinstance(data, dict) and data.get("retryable") is True:
                raise _Retry(0.5, f"retryable {error.get('code')}")
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


# -- the clients ---------------------------------------------------------------------------------------------------
class Client:
    """What both eras' clients share: a connection pool of their own, the operations loop, the notifier."""

    era = ""

    def __init__(self, load: RollingLoad, name: str) -> None:
        self.load = load
        self.tally = load.tally
        self.options = load.options
        self.name = name
        self.uri = WATCH.format(name=name)
        self.url = load.url
        self.rng = random.Random(f"{load.options.seed}-{name}")
        self.ids = itertools.count(1)
        self.http = httpx.AsyncClient(timeout=httpx.Timeout(self.options.request_timeout, connect=5.0))
        self.acked = 0
        self.received = 0
        self.failed_touches = 0
        self.touching = False
        """A touch is under way (its notification may come before its answer)."""
        self.touched_on = ""
        """The replica that ran the last touch acknowledged (as ``touch`` says)."""
        self.excess = 0
        """The most notifications seen beyond the touches made (each new high is quoted in the notes)."""
        self.history: list[str] = []
        """Its streams' openings and endings, and what went wrong, in order (quoted if something did)."""
        self.troubled = False
        self.dead = False

    async def close(self) -> None:
        await self.http.aclose()

    # one operation, counted
    async def run(self, kind: str, work: Callable[[Op], Awaitable[None]]) -> bool:
        op = Op(f"{self.era}/{kind}" if kind != "touch" else kind, self.name)
        stats = self.tally.kind(op.kind)
        stats.sent += 1
        self.tally.running[op.kind] += 1
        try:
            await work(op)
        except Failed as failed:
            stats.failed += 1
            stats.missing += failed.missing
            self.tally.fail(op.kind, failed.reason, failed.detail, self.name)
            if failed.reason == "http 404" and self.era == "handshake":
                self.dead = True  # the session is gone: nothing more can be counted on it
            return False
        except (httpx.HTTPError, ValueError, KeyError, TypeError, AttributeError) as exc:  # a malformed answer
            stats.failed += 1
            self.tally.fail(op.kind, f"error {type(exc).__name__}", str(exc), self.name)
            return False
        else:
            stats.ok += 1
            stats.retried += op.retried
            return True
        finally:
            self.tally.running[op.kind] -= 1
            self.tally.ops_done += 1
            await self.tally.poke()

    async def retrying(self, op: Op, attempt: Callable[[], Awaitable[T]]) -> T:
        for _ in range(self.options.retry_limit):
            try:
                return await attempt()
            except _Retry as retry:
                op.retried = True
                self.tally.retries[f"{op.kind}: {retry.reason}"] += 1
                await asyncio.sleep(min(retry.after, self.options.retry_after_cap))  # as the server asked
        raise Failed("still refused after retries", f"{self.options.retry_limit} retries")

    async def operations(self) -> None:
        """echo, slow, a task; again until the load stops."""
        while not self.load.stopping.is_set() and not self.dead:
            await self.run("echo", self.echo)
            if self.load.stopping.is_set() or self.dead:
                break
            await self.run("slow", self.slow)
            if self.load.stopping.is_set() or self.dead:
                break
            await self.run("task", self.task)

    async def echo(self, op: Op) -> None:
        text = f"{self.name} {self.rng.randrange(1 << 30)}"
        result, _ = await self.call(op, "tools/call", {"name": "echo", "arguments": {"text": text}})
        if text_of(result) != text:
            raise Failed("wrong answer", json.dumps(result)[:200])

    async def slow(self, op: Op) -> None:
        steps = self.rng.randint(*self.options.slow_steps)
        token = f"{self.name}-{next(self.ids)}"
        result, exchange = await self.call(op, "tools/call", {"name": "slow", "arguments": {
            "steps": steps, "interval_ms": self.options.slow_interval_ms}}, token=token)
        got = exchange.progress
        distinct = set(got)
        self.tally.progress_lost += len(set(range(1, steps + 1)) - distinct)
        self.tally.progress_duplicated += len(got) - len(distinct)
        if len(distinct) != steps or len(got) != steps:
            self.tally.note(f"{self.name} {op.kind}: progress {got} for {steps} steps")
        if text_of(result) != f"slow: {steps} steps":
            raise Failed("wrong answer", json.dumps(result)[:200])

    async def task(self, op: Op) -> None:
        raise NotImplementedError

    async def call(self, op: Op, method: str, params: JSON, *, token: str | None = None) -> tuple[JSON, Exchange]:
        raise NotImplementedError

    async def poll_task(self, op: Op, task_id: str, interval_ms: Any) -> JSON:
        """``tasks/get`` until the task is terminal (pausing its ``pollInterval``, capped at 0.5 s)."""
        pause = min(float(interval_ms) / 1000 if isinstance(interval_ms, int | float) else 0.2, 0.5)
        deadline = time.monotonic() + self.options.task_bound
        while True:
            state, _ = await self.call(op, "tasks/get", {"taskId": task_id})
            if state.get("status") in TERMINAL:
                return state
            if time.monotonic() > deadline:
                raise Failed("task still working", f"{task_id}: {state.get('status')}")
            await asyncio.sleep(pause)  # the server's poll interval

    # the notifier
    def listening(self) -> bool:
        raise NotImplementedError

    async def notifier(self) -> None:
        """Touch the client's resource, one touch at a time, each followed by a bounded wait for its
        notification; until the load stops."""
        while not self.load.stopping.is_set() and not self.dead:
            before = self.received
            was_listening = self.listening()
            self.touching = True
            touched = await self.load.touch(self)
            self.touching = False
            if touched:
                self.acked += 1
                self.touched(was_listening and self.listening())
                # Every touch of a session must come out; in the stateless era only those made while listening.
                expected = self.era == "handshake" or was_listening
                if expected and not await self.load.until(self.beyond(before),
                                                          self.options.notification_bound):
                    late = (f"no notification within {self.options.notification_bound:.0f}s of touch #{self.acked} "
                            f"run on {self.touched_on} (stream open at the touch: {was_listening}, now: "
                            f"{self.listening()})")
                    self.tally.note(f"{self.name}: {late}")
                    self.log(late, trouble=True)
            else:
                self.failed_touches += 1
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.load.stopping.wait(), self.options.touch_pause)  # pacing

    def touched(self, while_listening: bool) -> None:
        """One more touch acknowledged."""

    def log(self, text: str, *, trouble: bool = False) -> None:
        self.history.append(f"t={self.tally.elapsed():6.1f}s {text}")
        del self.history[:-SAMPLES]
        self.troubled |= trouble

    def beyond(self, count: int) -> Callable[[], bool]:
        """Whether more than ``count`` notifications have arrived."""
        return lambda: self.received > count

    async def streams(self) -> None:
        """The long-lived stream (GET, subscriptions/listen), kept open until the load closes."""
        raise NotImplementedError

    async def ready(self) -> None:
        """Until the client's stream is open (bounded by the caller)."""
        raise NotImplementedError


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


# -- the load --------------------------------------------------------------------------------------------------------
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
