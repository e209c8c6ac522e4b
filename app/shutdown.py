"""The one shutdown sequence of every transport: stdio at EOF or SIGTERM, HTTP at SIGTERM (its drain) and
at the end of its lifespan.

1. ``subscriptions/listen`` requests answer and end (the bus ends), and the transport stops taking work
   (``quiesce``: over HTTP ``initialize`` answers 503 and GET streams close, for clients to reconnect
   elsewhere);
2. requests and tasks in flight get ``grace`` seconds to finish: every request ``wiremcp.entry.serve`` is
   answering (``RequestsInFlight``, whatever its transport or era) and, unless the transport's one client
   is gone (stdio), every task;
3. tasks still running here end, failed, saying why (no poller waits for a task that will never end);
4. requests still running are cut off: each is answered with ``CUT_OFF`` (-32603, ``data.retryable``: the
   client may send it again, to another replica), and its handler is cancelled.

What is left (streams, sessions, the connection) the transport closes after: every request has its answer
by then, so nothing a client waits for holds the process open.
"""

from __future__ import annotations

import asyncio
import io
import logging
import time
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

from wiremcp import jsonrpc
from wiremcp.errors import INTERNAL_ERROR
from wiremcp.outcome import Outcome
from wiremcp.replicas import replica_of
from wiremcp.types import RequestId

if TYPE_CHECKING:
    from collections.abc import Callable

    from wiremcp.server import MCPServer

log = logging.getLogger("wiremcp.shutdown")

CUT_OFF = "The server shut down before the request finished; the request was not completed"
CUT_OFF_BOUND = 2.0
"""Seconds the requests cut off get to send their answers (their handlers' own clean-up on cancellation
included); the shutdown goes on after it whatever a handler that ignores its cancellation does."""
STEP_BOUND = 5.0
"""Seconds each closing step of a shutdown (failing the tasks left, closing the stores, giving up the
replica's lease) gets: one that takes longer is logged, with where it waits, and left behind, so that the
process still exits."""


async def bounded(step: str, work: Awaitable[Any], seconds: float | None = None) -> bool:
    """Await ``work`` for at most ``seconds`` (``STEP_BOUND`` by default); True if it ended (an exception it
    raised is logged in one line, not raised). One that runs longer is cancelled and not waited for (a
    coroutine that ignores its cancellation would hold the shutdown forever), and the warning says where it
    was waiting."""
    seconds = STEP_BOUND if seconds is None else seconds
    task = asyncio.ensure_future(work)
    done, _ = await asyncio.wait({task}, timeout=seconds)
    if not done:
        where = io.StringIO()
        if isinstance(task, asyncio.Task):
            task.print_stack(limit=8, file=where)
        log.warning("%s did not end within %.1fs and was left behind; it waited at:\n%s",
                    step, seconds, where.getvalue().rstrip())
        task.cancel()
        return False
    if not task.cancelled() and (error := task.exception()) is not None:
        # One line: at shutdown a store that has gone away is common, and its traceback says nothing more.
        log.warning("%s failed: %s: %s", step, type(error).__name__, error)
    return True


class RequestsInFlight:
    """The requests being answered now in this runtime, by every transport in both eras: ``serve`` enters
    each one's task on its way in and leaves it on its way out. The shutdown sequence waits for them, then
    cuts off those still running (``cut_off``), and ``serve`` answers those with ``cut_off_outcome``."""

    __slots__ = ("_cut", "_running")

    def __init__(self) -> None:
        self._running: set[asyncio.Task[Any]] = set()
        self._cut: set[asyncio.Task[Any]] = set()

    def enter(self, task: asyncio.Task[Any] | None) -> asyncio.Task[Any] | None:
        """``task``, the running one, starts answering a request."""
        if task is not None:
            self._running.add(task)
        return task

    def leave(self, task: asyncio.Task[Any] | None) -> None:
        if task is not None:
            self._running.discard(task)
            self._cut.discard(task)

    def __len__(self) -> int:
        return len(self._running)

    def running(self) -> list[asyncio.Task[Any]]:
        return [task for task in self._running if not task.done()]

    def cut_off(self) -> list[asyncio.Task[Any]]:
        """Cancel every request still running, each marked as cut off by the shutdown (``was_cut_off``)."""
        tasks = self.running()
        for task in tasks:
            self._cut.add(task)
            task.cancel()
        return tasks

    def was_cut_off(self, task: asyncio.Task[Any] | None) -> bool:
        """Whether ``task``'s cancellation is the shutdown's (and not, say, the client's)."""
        return task in self._cut


def cut_off_outcome(server: MCPServer, request_id: RequestId) -> Outcome:
    """The answer of a request the shutdown cut off: -32603 saying so, retryable, as a failed task's
    (over HTTP, where the answer has not started: 503 with ``Retry-After``)."""
    link = server.runtime.backend.link
    data = {"replica": replica_of(link.replica) if link is not None else None, "retryable": True}
    return Outcome(jsonrpc.error(request_id, INTERNAL_ERROR, CUT_OFF, data), unavailable=True)


async def shut_down(server: MCPServer, *, grace: float, quiesce: Callable[[], None] | None = None,
                    wait_for_tasks: bool = True, step_bound: float | None = None) -> int:
    """Run the sequence; returns how many requests were still running when ``grace`` ran out (and were
    cut off). ``wait_for_tasks=False``: the grace is for requests only, tasks are failed after it whatever
    their state (stdio: the one client, gone, will never poll them). ``step_bound``: how long failing the
    tasks left (their handlers' clean-up included) may take (``bounded``)."""
    runtime = server.runtime
    requests = runtime.requests
    runtime.backend.bus.end_all()
    if quiesce is not None:
        quiesce()
    deadline = time.monotonic() + grace

    def unfinished() -> list[asyncio.Task[Any]]:
        running = requests.running()
        if wait_for_tasks and runtime.has_task_runner:
            running.extend(task for task in runtime.task_runner.running if not task.done())
        return running

    while (waiting := unfinished()) and (left := deadline - time.monotonic()) > 0:
        await asyncio.wait(waiting, timeout=left, return_when=asyncio.ALL_COMPLETED)
    if runtime.has_task_runner:
        await bounded("failing the tasks still running", runtime.task_runner.shutdown(), step_bound)
    cut = requests.cut_off()
    if cut:
        _, stuck = await asyncio.wait(cut, timeout=CUT_OFF_BOUND)
        if stuck:
            log.warning("%d requests cut off by the shutdown did not end within %.1fs of their cancellation",
                        len(stuck), CUT_OFF_BOUND)
    return len(cut)
