"""The ``tasks/*`` methods of both eras, over a ``TaskRunner`` (which runs the tasks and keeps them).

- 2025-11-25 (handshake era): ``tasks/get`` (the ``Task``), ``tasks/result`` (waits, carrying the
  task's messages, then answers exactly what the call answered), ``tasks/list``, ``tasks/cancel`` (the
  ``Task``; -32602 for one already ended).
- 2026-07-28 (the tasks extension): ``tasks/get`` (the ``DetailedTask``), ``tasks/update`` (answers to
  input requests) and ``tasks/cancel``, both acknowledged with an empty result; each needs the
  extension declared on the request (-32021).

Every method looks the task up for the caller (``owner``): another owner's task is unknown (-32602).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

from wiremcp import access
from wiremcp.errors import INTERNAL_ERROR, InvalidParams, MCPError
from wiremcp.task_runner import RELATED_TASK, owner, require_extension
from wiremcp.tasks import TERMINAL, TaskRecord
from wiremcp.types import JSONObject

if TYPE_CHECKING:
    from wiremcp.context import Context
    from wiremcp.subscriptions import Subscription
    from wiremcp.task_runner import TaskRunner


async def _next_change(changes: Subscription, task_id: str, timeout: float) -> None:
    """Wait until the task changes (anywhere) or ``timeout`` elapses, whichever comes first."""
    async def changed() -> None:
        async for event in changes:
            params = event.get("params")
            if event.get("method") == "notifications/tasks" and isinstance(params, dict) \
                    and params.get("taskId") == task_id:
                return

    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(changed(), timeout)


class TaskMethods:
    """Answers the ``tasks/*`` requests for one server's ``TaskRunner``."""

    def __init__(self, runner: TaskRunner) -> None:
        self.runner = runner

    async def _record(self, params: JSONObject, ctx: Context) -> TaskRecord:
        task_id = params.get("taskId")
        record = await self.runner.store.get(task_id, owner(ctx)) if isinstance(task_id, str) and task_id else None
        if record is None:
            raise InvalidParams("Failed to retrieve task: Task not found")
        return await self.runner.settle_orphan(access.task(record, ctx))

    async def owned(self, task_ids: list[Any], ctx: Context) -> list[TaskRecord]:
        """The caller's live tasks among ``task_ids``, as they are now (a ``subscriptions/listen`` follows
        them, starting from this state)."""
        mine = []
        for task_id in dict.fromkeys(t for t in task_ids if isinstance(t, str) and t):
            record = await self.runner.store.get(task_id, owner(ctx))
            if record is not None and access.task_visible(record, ctx):
                mine.append(await self.runner.settle_orphan(record))
        return mine

    # -- the 2025-11-25 methods ---------------------------------------------------------------------
    async def get(self, params: JSONObject, ctx: Context) -> JSONObject:
        return (await self._record(params, ctx)).to_2025_11_25()

    async def result(self, params: JSONObject, ctx: Context) -> JSONObject:
        """Wait until the task is terminal, then answer exactly what the call answered."""
        record = await self._record(params, ctx)
        forwarded: set[str] = set()
        while record.status not in TERMINAL:
            outlet = self.runner.outlet(record.task_id)
            if outlet is not None:
                # Running here: its requests for input (and other messages) go out on this stream.
                while outlet.queue:
                    await ctx.forward(outlet.queue.popleft())
                outlet.ready.clear()
                if self.runner.outlet(record.task_id) is outlet and not outlet.queue:
                    await outlet.ready.wait()
                record = await self._record(params, ctx)
                continue
            # Running on another replica: carry its requests for input (the client's answers find their
            # way back by their ids), and wait for the task to change there.
            with self.runner.bus.subscribe() as changes:
                record = await self._record(params, ctx)
                if record.status in TERMINAL:
                    break
                for key, message in record.input_requests.items():
                    if key not in forwarded and isinstance(message, dict) and "id" in message:
                        forwarded.add(key)
                        await ctx.forward(message)
                poll = (record.poll_interval_ms or self.runner.poll_interval_ms) / 1000
                await _next_change(changes, record.task_id, poll)
            # (the next round reads the task again, inside its subscription)
        for message in self.runner.leftovers(record.task_id):  # sent just before the task ended
            await ctx.forward(message)
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
        records, next_cursor = await self.runner.store.list(owner(ctx), cursor)
        out: JSONObject = {"tasks": [record.to_2025_11_25() for record in records
                                     if access.task_visible(record, ctx)]}
        if next_cursor is not None:
            out["nextCursor"] = next_cursor
        return out

    async def cancel(self, params: JSONObject, ctx: Context) -> JSONObject:
        record = await self._record(params, ctx)
        if record.terminal:
            raise InvalidParams(f"Cannot cancel a task that is already {record.status}")
        return (await self.runner.cancel_task(record)).to_2025_11_25()

    # -- the 2026-07-28 extension's methods -----------------------------------------------------------
    async def get_detailed(self, params: JSONObject, ctx: Context) -> JSONObject:
        require_extension(ctx)
        return (await self._record(params, ctx)).to_2026_07_28()

    async def update(self, params: JSONObject, ctx: Context) -> JSONObject:
        """``tasks/update``: take the client's answers to the task's outstanding input requests."""
        require_extension(ctx)
        responses = params.get("inputResponses")
        if not isinstance(responses, dict):
            raise InvalidParams("Invalid params: tasks/update needs an inputResponses object")
        for key, value in responses.items():
            if not isinstance(value, dict):
                raise InvalidParams(f"Invalid params: inputResponses[{key!r}] must be an object")
        record = await self._record(params, ctx)  # the caller's, and it may still use the task's tool
        outcome = await self.runner.store.answer_inputs(record.task_id, owner(ctx), responses)
        if outcome is None:
            raise InvalidParams("Failed to update task: Task not found")
        record, taken = outcome
        if taken:
            await self.runner.inputs.answers_arrived(record)
        return {}

    async def cancel_ack(self, params: JSONObject, ctx: Context) -> JSONObject:
        """``tasks/cancel``: an empty acknowledgement, also for a task that has already ended."""
        require_extension(ctx)
        record = await self._record(params, ctx)
        if not record.terminal:
            await self.runner.cancel_task(record)
        return {}
