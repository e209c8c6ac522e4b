"""Tool calls that run as tasks the client polls, in both eras, from one tool definition.

- **2025-11-25** (handshake era, experimental tasks): the client asks for a task (``params.task``) and
  gets ``CreateTaskResult {task}`` at once; it polls ``tasks/get``, waits for the outcome with
  ``tasks/result``, lists (``tasks/list``) and cancels (``tasks/cancel``). What the handler sends the
  client (``ctx.elicit``, logs, progress) waits for a ``tasks/result`` request and goes out on its stream,
  tagged ``io.modelcontextprotocol/related-task``.
- **2026-07-28** (stateless era, the ``io.modelcontextprotocol/tasks`` extension): the server decides. A
  call of a tool with ``task_support`` from a client declaring the extension answers the flat
  ``CreateTaskResult`` (``resultType: "task"``); the client polls ``tasks/get`` (the ``DetailedTask``:
  ``inputRequests``, ``result`` or ``error`` inlined), answers input requests with ``tasks/update`` and
  cancels with ``tasks/cancel``; ``subscriptions/listen`` with ``taskIds`` pushes ``notifications/tasks``.
  A tool error is a ``completed`` task whose result has ``isError`` (2025-11-25: ``failed``).

A task belongs to whoever created it: the authenticated principal, or else the session (stateless era
without authentication: anyone holding the id, which is 256 random bits). Another owner's task answers
like an unknown one (-32602). Tasks run in the process that created them; their records live in the
server's ``TaskStore`` (Redis: every replica answers for every task). While the handler waits for an
answer the task is ``input_required``. This module runs the tasks; ``wiremcp.task_inputs`` carries a
2026-07-28 task's requests for input and their answers; ``wiremcp.task_methods`` answers the ``tasks/*``
requests.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from wiremcp.asking import ClientRequests
from wiremcp.errors import INTERNAL_ERROR, InvalidParams, MCPError, MissingClientCapability
from wiremcp.failures import internal_error
from wiremcp.input_required import InputRequired, input_key
from wiremcp.principal import key_of
from wiremcp.protocol import TASKS_EXTENSION as EXTENSION
from wiremcp.replicas import replica_of
from wiremcp.task_inputs import TaskInputs
from wiremcp.tasks import InMemoryTaskStore, TaskRecord, TaskStore
from wiremcp.types import JSONObject, Send
from wiremcp.unavailable import StoreUnavailable

if TYPE_CHECKING:
    from wiremcp.context import Context
    from wiremcp.replica_link import ReplicaLink
    from wiremcp.subscriptions import SubscriptionBus
    from wiremcp.tools import Tool

log = logging.getLogger("wiremcp.tasks")

RELATED_TASK = "io.modelcontextprotocol/related-task"
ACTIVE = frozenset({"working", "input_required"})
WORKING = "The operation is now in progress."
CANCELLED = "The task was cancelled by request."
ORPHANED = "The replica running this task stopped before it finished; the task was not completed"
SHUT_DOWN = "The server shut down before the task finished; the task was not completed"
END_ATTEMPTS = 12
"""Tries at writing a task's outcome (backing off from 0.1 s to 2 s: about 15 s in all)."""
LEFTOVER_TASKS = 256
"""Ended 2025-11-25 tasks whose last messages are kept for a ``tasks/result`` that has not come yet."""
OUTLET_LIMIT = 1000
"""A 2025-11-25 task's notifications (logs, progress) kept for a ``tasks/result`` at most; more are dropped."""


def declares_extension(ctx: Context) -> bool:
    """Whether this request's client declared the 2026-07-28 tasks extension."""
    extensions = ctx.client_capabilities.get("extensions")
    return isinstance(extensions, dict) and isinstance(extensions.get(EXTENSION), dict)


def require_extension(ctx: Context) -> None:
    if not declares_extension(ctx):
        raise MissingClientCapability({"extensions": {EXTENSION: {}}})


def owner(ctx: Context) -> str | None:
    """Whom a task belongs to: the principal's key, or the session when nobody is authenticated."""
    key = key_of(ctx.principal)
    if key is not None:
        return key
    return f"session:{ctx.state.id}" if ctx.state.id else None


async def _discard(message: JSONObject) -> None:
    """The extension's tasks carry no progress or log messages."""


class _Outlet:
    """A 2025-11-25 task's messages to the client (input requests, logs, progress), tagged with the task,
    kept until a ``tasks/result`` request carries them on its stream. Its requests for input are also
    written to the task's record, so that a ``tasks/result`` on another replica carries them too."""

    __slots__ = ("changed", "dropping", "queue", "ready", "store", "task_id")

    def __init__(self, task_id: str, store: TaskStore, changed: Callable[[TaskRecord | None], None]) -> None:
        self.task_id = task_id
        self.store = store
        self.changed = changed
        self.dropping = False
        self.queue: deque[JSONObject] = deque()
        self.ready = asyncio.Event()

    async def send(self, message: JSONObject) -> None:
        params = dict(message.get("params") or {})
        params["_meta"] = {**(params.get("_meta") or {}), RELATED_TASK: {"taskId": self.task_id}}
        tagged = {**message, "params": params}
        if "id" in message and "method" in message:
            self.changed(await self.store.add_input_request(self.task_id, str(message["id"]), tagged))
        elif len(self.queue) >= OUTLET_LIMIT:  # nobody reads them: keep the requests, not every log line
            if not self.dropping:
                log.warning("task %s: no tasks/result is reading its messages; dropping its notifications",
                            self.task_id)
            self.dropping = True
            return
        self.queue.append(tagged)
        self.ready.set()


class TaskBinding:
    """What a handler's context knows of the task it runs as; once a call is a task, the task asks the
    client for input (``wiremcp.asking``): in the stateless era through the task's record (``TaskInputs``),
    in the handshake era with a request to the client (``direct``) while the task shows ``input_required``."""

    __slots__ = ("_count", "direct", "owner", "runner", "task_id")

    def __init__(self, runner: TaskRunner, task_id: str, owner: str | None, count: int) -> None:
        self.runner = runner
        self.task_id = task_id
        self.owner = owner
        self._count = count
        self.direct: ClientRequests | None = None
        """Handshake era: how the task's requests reach the client."""

    def next_key(self, method: str) -> str:
        """A key for the next input request: unique over the task's life (it continues the call's own
        ``InputRequired`` rounds' numbering)."""
        self._count += 1
        return input_key(method, self._count)

    async def ask(self, method: str, params: JSONObject | None, timeout: float | None) -> JSONObject:
        if self.direct is None:
            return await self.runner.inputs.wait_for_input(self, method, params, timeout)
        runner = self.runner
        try:  # the request, as it goes out (``_Outlet.send``), makes the task input_required
            return await self.direct.ask(method, params, timeout)
        finally:
            record = await runner.store.transition(self.task_id, "working", expect={"input_required"},
                                                   status_message=WORKING, input_requests={})
            runner.changed(record)


@dataclass(frozen=True, slots=True)
class TaskSettings:
    """How tasks are run: their lifetimes, the poll interval suggested to clients, and how many one owner may
    have running at once in this process (one more is refused, -32603)."""

    default_ttl_ms: int = 3_600_000
    max_ttl_ms: int = 86_400_000
    poll_interval_ms: int = 1_000
    max_running_per_owner: int = 100


class TaskRunner:
    """Runs tool calls as tasks and answers the ``tasks/*`` methods of both eras. ``bus``: where task changes
    go to ``subscriptions/listen``; ``store``: where tasks live; ``link``: the link to the other replicas
    sharing the store (cancels and input answers reach the replica running a task; a task whose replica died is failed)."""

    def __init__(self, bus: SubscriptionBus, store: TaskStore | None = None, *, settings: TaskSettings | None = None,
                 link: ReplicaLink | None = None) -> None:
        self.bus = bus
        self.store: TaskStore = store or InMemoryTaskStore()
        settings = settings or TaskSettings()
        self.default_ttl_ms = settings.default_ttl_ms
        self.max_ttl_ms = max(settings.max_ttl_ms, settings.default_ttl_ms)
        self.poll_interval_ms = settings.poll_interval_ms
        self.max_running_per_owner = settings.max_running_per_owner
        self.link = link
        self.replica: str | None = link.replica if link is not None else None
        """This process life's name among replicas sharing the store (``wiremcp.replicas``)."""
        self._running: dict[str, asyncio.Task[Any]] = {}
        self._bindings: dict[str, TaskBinding] = {}
        self._outlets: dict[str, _Outlet] = {}
        self._leftovers: dict[str, deque[JSONObject]] = {}
        self.ended: Counter[str] = Counter()
        """How the tasks run here ended, by status (metrics)."""
        self.inputs = TaskInputs(self)
        """The requests for input of the 2026-07-28 tasks running here, and the handlers awaiting answers."""

    # -- running calls as tasks -------------------------------------------------------------------
    async def call(self, tool: Tool, arguments: JSONObject, ctx: Context, requested: Any = None) -> JSONObject:
        """Run a ``tools/call`` that is to be a task: the 2025-11-25 ``params.task`` (``requested``), or the
        2026-07-28 extension. The answer is the ``CreateTaskResult`` once the task is durably stored, or
        (``task_start="handler"`` whose handler has not started the task) the call's own outcome."""
        ttl_ms = self.default_ttl_ms
        if not ctx.stateless:
            if not isinstance(requested, dict):
                raise InvalidParams("tools/call: task must be an object")
            ttl = requested.get("ttl")
            if ttl is not None and (not isinstance(ttl, int) or isinstance(ttl, bool) or ttl < 0):
                raise InvalidParams("tools/call: task.ttl must be a non-negative integer (milliseconds)")
            # At least a second: a task that expired before its creator could poll it would help nobody.
            ttl_ms = max(1_000, min(ttl if ttl is not None else self.default_ttl_ms, self.max_ttl_ms))
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[JSONObject] = loop.create_future()

        async def start() -> None:
            principal = owner(ctx)
            if sum(1 for b in self._bindings.values() if b.owner == principal) >= self.max_running_per_owner:
                raise MCPError(INTERNAL_ERROR, f"Too many tasks running for this client (at most "
                               f"{self.max_running_per_owner}); try again once one has finished",
                               {"retryable": True})
            record = TaskRecord.new(principal, ttl_ms=ttl_ms, poll_interval_ms=self.poll_interval_ms,
                                    status_message=WORKING, owner_replica=self.replica, tool=tool.name)
            await self.store.create(record)
            task_id = record.task_id
            count = ctx.exchange.asked if ctx.exchange is not None else 0
            binding = self._bindings[task_id] = TaskBinding(self, task_id, record.principal, count)
            send: Send = _discard
            if not ctx.stateless:
                send = (outlet := _Outlet(task_id, self.store, self.changed)).send
                self._outlets[task_id] = outlet
            ctx.become_task(binding, send)
            current = asyncio.current_task()
            assert current is not None
            self._running[task_id] = current
            answer.set_result({"resultType": "task", **record.to_2026_07_28_task()} if ctx.stateless
                              else {"task": record.to_2025_11_25()})

        ctx._starter = start
        immediately = not ctx.stateless or tool.task_start == "call"
        driver = loop.create_task(self._drive(tool, arguments, ctx, answer, immediately))
        try:
            return await asyncio.shield(answer)
        except asyncio.CancelledError:
            if ctx.task is None:  # the request went away before the call became a task: stop it
                driver.cancel()
            raise

    async def _drive(self, tool: Tool, arguments: JSONObject, ctx: Context, answer: asyncio.Future[JSONObject],
                     immediately: bool) -> None:
        """Run the handler; its outcome answers the request until the call is a task, the task after."""
        try:
            if immediately:
                await ctx.start_task()
            result = await tool.call(arguments, ctx)
        except asyncio.CancelledError:
            if ctx.task is None:
                answer.cancel()
                raise
            await self._end(ctx.task.task_id, "cancelled", status_message=CANCELLED)
        except Exception as exc:
            if ctx.task is None:
                if not answer.done():
                    answer.set_exception(exc)
                return
            await self._end(ctx.task.task_id, "failed", **self._failure(ctx.task.task_id, exc, ctx.server.error_details))
        else:
            if ctx.task is None:
                answer.set_result(result)
                return
            # 2025-11-25: a tool error fails the task; the extension: the task completed with that result.
            failed = bool(result.get("isError")) and not ctx.stateless
            await self._end(ctx.task.task_id, "failed" if failed else "completed", result=result,
                            status_message="The tool reported an error" if failed else None)
        finally:
            if ctx.task is not None:
                self._forget(ctx.task.task_id)

    @staticmethod
    def _failure(task_id: str, exc: Exception, details: bool) -> dict[str, Any]:
        if isinstance(exc, MCPError):
            return {"error": exc.to_error(), "status_message": exc.message}
        if isinstance(exc, InputRequired):
            message = "The tool asked for input through InputRequired inside a task; use ctx.elicit and the like"
            log.error("task %s: %s", task_id, message)
            return {"error": {"code": INTERNAL_ERROR, "message": message}, "status_message": message}
        failure = internal_error(f"Task {task_id} failed", exc, details=details)
        return {"error": failure.to_error(), "status_message": failure.message}

    async def _end(self, task_id: str, status: str, *, attempts: int = END_ATTEMPTS, **fields: Any) -> None:
        """Write how the task ended. A store that is away for a moment (Redis restarting) is tried again
        for a while: an outcome is not given up lightly, or the task would stay ``working`` until its TTL."""
        delay = 0.1
        for attempt in range(1, attempts + 1):
            try:
                record = await self.store.transition(task_id, status, expect=ACTIVE, **fields)
                break
            except Exception as exc:
                # A store that is away says so in one line; anything else is a bug, and shows its traceback.
                away = isinstance(exc, StoreUnavailable)
                if attempt == attempts:
                    log.error("task %s: could not record that it ended (%s); it stays as it was until its TTL: %s",
                              task_id, status, exc, exc_info=not away)
                    return
                log.warning("task %s: could not record its end (%s), trying again: %s", task_id, status, exc,
                            exc_info=not away)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)
        self.changed(record)
        if record is not None:
            self.ended[status] += 1

    def _forget(self, task_id: str) -> None:
        self._running.pop(task_id, None)
        self._bindings.pop(task_id, None)
        self.inputs.forget(task_id)
        outlet = self._outlets.pop(task_id, None)
        if outlet is not None:
            outlet.ready.set()
            if outlet.queue:  # sent just before the end: the next tasks/result still carries them
                self._leftovers[task_id] = outlet.queue
                while len(self._leftovers) > LEFTOVER_TASKS:
                    self._leftovers.pop(next(iter(self._leftovers)))

    def changed(self, record: TaskRecord | None) -> None:
        """Tell ``subscriptions/listen`` streams following the task (any replica) its new state."""
        if record is not None:
            self.bus.publish({"jsonrpc": "2.0", "method": "notifications/tasks",
                                     "params": record.to_2026_07_28()})

    @property
    def running(self) -> list[asyncio.Task[Any]]:
        """The tasks this process is running now (a graceful drain lets them finish)."""
        return list(self._running.values())

    async def shutdown(self) -> None:
        """The server is stopping and the drain window is over: fail the tasks still running here, saying
        why (so that no poller waits for a task that will never end), then stop their handlers."""
        running = dict(self._running)
        for task_id in running:
            # One try: if the store is away, with Redis the other replicas fail it once the lease lapses.
            await self._end(task_id, "failed", attempts=1, status_message=SHUT_DOWN,
                            error={"code": INTERNAL_ERROR, "message": SHUT_DOWN,
                                   "data": {"replica": replica_of(self.replica) if self.replica else None,
                                            "retryable": True}})
        for handler in running.values():
            handler.cancel()
        await asyncio.gather(*running.values(), return_exceptions=True)

    async def cancel_owned(self, principal: str) -> None:
        """Cancel the tasks of one owner running here (its handshake-era session has ended)."""
        for task_id, binding in list(self._bindings.items()):
            if binding.owner == principal:
                await self._end(task_id, "cancelled", status_message="The session that owned the task ended")
                self.cancel_local(task_id)

    def cancel_local(self, task_id: str) -> None:
        """Stop the task if it runs here (a cancel that reached another replica)."""
        running = self._running.get(task_id)
        if running is not None:
            running.cancel()

    # -- what the tasks/* methods ask of the runner ----------------------------------------------------
    async def settle_orphan(self, record: TaskRecord) -> TaskRecord:
        """A task still active whose replica has stopped will never end: fail it, saying why."""
        runner = record.owner_replica
        if (record.status in ACTIVE and runner is not None and runner != self.replica and self.link is not None
                and not await self.link.alive(runner)):
            failed = await self.store.transition(
                record.task_id, "failed", expect=ACTIVE, status_message=ORPHANED,
                error={"code": INTERNAL_ERROR, "message": ORPHANED,
                       "data": {"replica": replica_of(runner), "retryable": True}})
            if failed is not None:
                self.changed(failed)
                return failed
            return await self.store.get(record.task_id, record.principal) or record
        return record

    async def cancel_task(self, record: TaskRecord) -> TaskRecord:
        """Cancel a task (cooperatively: its handler, here or on another replica, sees CancelledError)."""
        await self.store.request_cancel(record.task_id, record.principal)
        cancelled = await self.store.transition(record.task_id, "cancelled", expect=ACTIVE,
                                                status_message=CANCELLED)
        self.changed(cancelled)
        running = self._running.get(record.task_id)
        if running is not None:
            running.cancel()  # cooperative: the handler sees CancelledError
        elif self.link is not None:
            await self.link.broadcast_task_cancel(record.task_id)
        return cancelled or await self.store.get(record.task_id, record.principal) or record

    def binding(self, task_id: str) -> TaskBinding | None:
        """The binding of a task running here (None: it does not run here, or has ended)."""
        return self._bindings.get(task_id)

    def outlet(self, task_id: str) -> _Outlet | None:
        """The messages of a 2025-11-25 task running here (None: it does not run here, or has ended)."""
        return self._outlets.get(task_id)

    def leftovers(self, task_id: str) -> deque[JSONObject]:
        """What a 2025-11-25 task that ended here sent that no ``tasks/result`` has carried yet (taken)."""
        return self._leftovers.pop(task_id, deque())
