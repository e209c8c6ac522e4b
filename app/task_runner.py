"""Task-augmented tool calls of the 2025-11-25 experimental tasks (handshake era): the call runs in the
background, the client gets ``CreateTaskResult {task}`` at once and polls (``tasks/get``), waits for the
outcome (``tasks/result``), lists (``tasks/list``) or cancels (``tasks/cancel``).

A task belongs to whoever created it: the authenticated principal, or else the session. Another owner's
task answers like an unknown one (-32602). Tasks run in this process; their records live in the
server's ``TaskStore``. What a task's handler sends the client (``ctx.elicit``, ``ctx.sample``, logs,
progress) waits for a ``tasks/result`` request and goes out on its stream, tagged with the task
(``io.modelcontextprotocol/related-task``); while the handler waits for an answer the task is
``input_required``.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from app.context import Context
from app.errors import INTERNAL_ERROR, InvalidParams, MCPError
from app.tasks import TERMINAL, InMemoryTaskStore, TaskRecord, TaskStore
from app.types import JSONObject

if TYPE_CHECKING:
    from app.server import MCPServer
    from app.tools import Tool

log = logging.getLogger("mcpwire.tasks")

RELATED_TASK = "io.modelcontextprotocol/related-task"
ACTIVE = frozenset({"working", "input_required"})
WORKING = "The operation is now in progress."
CANCELLED = "The task was cancelled by request."
ORPHANED = "The replica running this task stopped before it finished; the task was not completed"


class _Outlet:
    """A task's messages to the client (input requests, logs, progress), tagged with the task, kept until a
    ``tasks/result`` request carries them on its stream."""

    __slots__ = ("queue", "ready", "task_id")

    def __init__(self, task_id: str) -> None:
        self.task_id = task_id
        self.queue: deque[JSONObject] = deque()
        self.ready = asyncio.Event()

    async def send(self, message: JSONObject) -> None:
        params = dict(message.get("params") or {})
        params["_meta"] = {**(params.get("_meta") or {}), RELATED_TASK: {"taskId": self.task_id}}
        self.queue.append({**message, "params": params})
        self.ready.set()


class _TaskContext(Context):
    """A handler's context inside a task: asking the client for input moves the task to
    ``input_required`` until the answer arrives."""

    __slots__ = ("_runner", "_task_id")

    def bind(self, runner: TaskRunner, task_id: str) -> _TaskContext:
        self._runner = runner
        self._task_id = task_id
        return self

    async def request(self, method: str, params: JSONObject | None, timeout: float | None = None) -> JSONObject:
        store = self._runner.store
        await store.transition(self._task_id, "input_required", expect={"working"},
                               status_message=f"Waiting for the client's answer to {method}")
        try:
            return await super().request(method, params, timeout)
        finally:
            await store.transition(self._task_id, "working", expect={"input_required"}, status_message=WORKING)


def owner(ctx: Context) -> str | None:
    """Whom a task belongs to: the principal's key, or the session when nobody is authenticated."""
    principal = ctx.principal
    key = principal if isinstance(principal, str) else getattr(principal, "key", None)
    if key:
        return str(key)
    return f"session:{ctx.state.id}" if ctx.state.id else None


class TaskRunner:
    """Starts task-augmented calls and answers the ``tasks/*`` methods."""

    def __init__(self, server: MCPServer, store: TaskStore | None = None) -> None:
        self.server = server
        self.store: TaskStore = store or InMemoryTaskStore()
        self.default_ttl_ms = 3_600_000
        self.max_ttl_ms = 86_400_000
        self.poll_interval_ms = 1_000
        self._running: dict[str, asyncio.Task[None]] = {}
        self._finished: dict[str, asyncio.Event] = {}
        self._outlets: dict[str, _Outlet] = {}
        self.replica: str | None = None
        """This process's name among replicas sharing the store (set with a shared store)."""
        self.cancel_elsewhere: Callable[[str], Awaitable[None]] | None = None
        """Tells the replica running a task to stop it (set with a shared store)."""
        self.alive: Callable[[str], Awaitable[bool]] | None = None
        """Whether a replica still runs (its lease); a task whose replica died is failed."""

    async def start(self, tool: Tool, arguments: JSONObject, ctx: Context, request: Any) -> JSONObject:
        """Create the task (durably, before answering) and run the call in the background."""
        if not isinstance(request, dict):
            raise InvalidParams("tools/call: task must be an object")
        ttl = request.get("ttl")
        if ttl is not None and (not isinstance(ttl, int) or isinstance(ttl, bool) or ttl < 0):
            raise InvalidParams("tools/call: task.ttl must be a non-negative integer (milliseconds)")
        ttl_ms = min(ttl if ttl is not None else self.default_ttl_ms, self.max_ttl_ms)
        record = TaskRecord.new(owner(ctx), ttl_ms=ttl_ms, poll_interval_ms=self.poll_interval_ms,
                                status_message=WORKING, owner_replica=self.replica)
        await self.store.create(record)
        outlet = self._outlets[record.task_id] = _Outlet(record.task_id)
        run_ctx = _TaskContext(self.server, ctx.state, ctx.request_id, ctx.method, ctx.params, outlet.send,
                               session=ctx.session, principal=ctx.principal).bind(self, record.task_id)
        self._finished[record.task_id] = asyncio.Event()
        task = asyncio.get_running_loop().create_task(self._run(record.task_id, tool, arguments, run_ctx))
        self._running[record.task_id] = task
        return {"task": record.to_2025_11_25()}

    async def _run(self, task_id: str, tool: Tool, arguments: JSONObject, ctx: Context) -> None:
        try:
            result = await tool.call(arguments, ctx)
        except asyncio.CancelledError:
            await self.store.transition(task_id, "cancelled", expect=ACTIVE, status_message=CANCELLED)
        except MCPError as exc:
            await self.store.transition(task_id, "failed", expect=ACTIVE, error=exc.to_error(),
                                        status_message=exc.message)
        except Exception:
            log.exception("task %s failed", task_id)
            await self.store.transition(task_id, "failed", expect=ACTIVE,
                                        error={"code": INTERNAL_ERROR, "message": "Internal error"},
                                        status_message="Internal error")
        else:
            # A tool result with isError is a failed task whose result is that CallToolResult.
            status = "failed" if result.get("isError") else "completed"
            await self.store.transition(task_id, status, expect=ACTIVE, result=result)
        finally:
            self._running.pop(task_id, None)
            finished = self._finished.pop(task_id, None)
            if finished is not None:
                finished.set()
            outlet = self._outlets.pop(task_id, None)
            if outlet is not None:
                outlet.ready.set()

    async def _record(self, params: JSONObject, ctx: Context) -> TaskRecord:
        task_id = params.get("taskId")
        record = await self.store.get(task_id, owner(ctx)) if isinstance(task_id, str) and task_id else None
        if record is None:
            raise InvalidParams("Unknown task id")
        return await self._orphan_check(record)

    async def _orphan_check(self, record: TaskRecord) -> TaskRecord:
        """A task still active whose replica has stopped will never end: fail it, saying why."""
        runner = record.owner_replica
        if (record.status in ACTIVE and runner is not None and runner != self.replica and self.alive is not None
                and not await self.alive(runner)):
            failed = await self.store.transition(
                record.task_id, "failed", expect=ACTIVE, status_message=ORPHANED,
                error={"code": INTERNAL_ERROR, "message": ORPHANED, "data": {"replica": runner}})
            if failed is not None:
                return failed
            return await self.store.get(record.task_id, record.principal) or record
        return record

    @property
    def running(self) -> list[asyncio.Task[None]]:
        """The tasks this process is running now (a graceful drain lets them finish)."""
        return list(self._running.values())

    def cancel_local(self, task_id: str) -> None:
        """Stop the task if it runs here (a cancel that reached another replica)."""
        running = self._running.get(task_id)
        if running is not None:
            running.cancel()

    # -- the methods ------------------------------------------------------------------------------
    async def get(self, params: JSONObject, ctx: Context) -> JSONObject:
        return (await self._record(params, ctx)).to_2025_11_25()

    async def result(self, params: JSONObject, ctx: Context) -> JSONObject:
        """Wait until the task is terminal, then answer exactly what the call answered."""
        record = await self._record(params, ctx)
        while record.status not in TERMINAL:
            outlet = self._outlets.get(record.task_id)
            if outlet is not None:
                # Running here: its requests for input (and other messages) go out on this stream.
                while outlet.queue:
                    await ctx.forward(outlet.queue.popleft())
                outlet.ready.clear()
                if record.task_id in self._outlets and not outlet.queue:
                    await outlet.ready.wait()
            else:  # running in another process: poll at the pace the task asks for
                await asyncio.sleep((record.poll_interval_ms or self.poll_interval_ms) / 1000)
            record = await self._record(params, ctx)
        related = {RELATED_TASK: {"taskId": record.task_id}}
        if record.result is not None:
            return {**record.result, "_meta": {**(record.result.get("_meta") or {}), **related}}
        if record.error is not None:
            code = record.error.get("code")
            raise MCPError(code if isinstance(code, int) else INTERNAL_ERROR,
                           str(record.error.get("message", "Task failed")), record.error.get("data"))
        raise MCPError(INTERNAL_ERROR, "The task was cancelled before it produced a result")

    async def list(self, params: JSONObject, ctx: Context) -> JSONObject:
        cursor = params.get("cursor")
        if cursor is not None and not isinstance(cursor, str):
            raise InvalidParams("Invalid cursor")
        records, next_cursor = await self.store.list(owner(ctx), cursor)
        out: JSONObject = {"tasks": [record.to_2025_11_25() for record in records]}
        if next_cursor is not None:
            out["nextCursor"] = next_cursor
        return out

    async def cancel(self, params: JSONObject, ctx: Context) -> JSONObject:
        record = await self._record(params, ctx)
        if record.terminal:
            raise InvalidParams(f"Cannot cancel a task that is already {record.status}")
        await self.store.request_cancel(record.task_id, owner(ctx))
        updated = await self.store.transition(record.task_id, "cancelled", expect=ACTIVE,
                                              status_message=CANCELLED)
        running = self._running.get(record.task_id)
        if running is not None:
            running.cancel()  # cooperative: the handler sees CancelledError
        elif self.cancel_elsewhere is not None:
            await self.cancel_elsewhere(record.task_id)
        if updated is None:  # it ended meanwhile
            updated = await self._record(params, ctx)
        return updated.to_2025_11_25()
