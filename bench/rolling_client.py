"""What both eras' clients of the rolling load (``bench/rolling_load.py``) share: ``Client``, with a connection
pool of its own, the operations loop (``echo``, ``slow``, a task), each operation counted, and the notifier
beside it (``touch`` of its resource, then a bounded wait for the notification).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import random
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

import httpx

from bench.rolling_counts import SAMPLES, Op
from bench.rolling_http import JSON, TERMINAL, WATCH, Exchange, Failed, Retry, text_of

if TYPE_CHECKING:
    from bench.rolling_load import RollingLoad

T = TypeVar("T")


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
            except Retry as retry:
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

