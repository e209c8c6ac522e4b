"""Input during a 2026-07-28 task (``TaskInputs``): the handler's requests for input, and their answers.

A handler running as a task that asks the client for input (``ctx.elicit`` and the like) adds an input
request to the task's record, which makes the task ``input_required``, and waits. The client answers with
``tasks/update`` on any replica: the replica running the task hands the answers to the waiting handler,
another one wakes it (``wake_elsewhere``). Should a wake-up be lost, the waiting handler re-reads its
record every ``RECHECK_SECONDS``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from wiremcp.errors import INTERNAL_ERROR, ClientTimeout, MCPError
from wiremcp.types import JSONObject

if TYPE_CHECKING:
    from wiremcp.task_runner import TaskBinding, TaskRunner
    from wiremcp.tasks import TaskRecord

log = logging.getLogger("wiremcp.tasks")

RECHECK_SECONDS = 5.0
"""How often a task waiting for input re-reads its record, should a wake-up from another replica be lost."""


class TaskInputs:
    """The input requests of the tasks a ``TaskRunner`` runs, and their handlers waiting for the answers."""

    def __init__(self, runner: TaskRunner) -> None:
        self.runner = runner
        self._waiting: dict[str, dict[str, asyncio.Future[JSONObject]]] = {}
        self._wakes: set[asyncio.Task[None]] = set()
        self.wake_elsewhere: Callable[[str], Awaitable[None]] | None = (
            runner.link.broadcast_task_input if runner.link is not None else None)
        """Tells the replica running a task that the client answered its input requests (shared store)."""

    async def wait_for_input(self, binding: TaskBinding, method: str, params: JSONObject | None,
                             timeout: float | None) -> JSONObject:
        """Add an input request to the task (``input_required``) and wait for the ``tasks/update`` that
        answers it, on whichever replica it arrives."""
        runner = self.runner
        task_id = binding.task_id
        key = binding.next_key(method)
        request: JSONObject = {"method": method}
        if params is not None:
            request["params"] = params
        loop = asyncio.get_running_loop()
        waiting = self._waiting.setdefault(task_id, {})
        arrived = waiting[key] = loop.create_future()
        deadline = None if timeout is None else loop.time() + timeout
        try:
            record = await runner.store.add_input_request(task_id, key, request)
            runner.changed(record)
            while record is not None:
                answer = record.input_responses.get(key)
                if isinstance(answer, dict):
                    return answer
                wait = RECHECK_SECONDS if deadline is None else min(RECHECK_SECONDS, deadline - loop.time())
                if wait <= 0:  # withdraw the request, so that the task no longer shows it as outstanding
                    runner.changed((await runner.store.answer_inputs(task_id, binding.owner,
                                                                     {key: {"action": "cancel"}}) or (None,))[0])
                    raise ClientTimeout(f"the client did not answer {method} in time")
                try:
                    return await asyncio.wait_for(asyncio.shield(arrived), wait)
                except TimeoutError:
                    try:
                        record = await runner.store.get(task_id, binding.owner)
                    except Exception:  # away for a moment: the answer will still be there
                        log.warning("task %s: could not re-read its record while waiting for input", task_id,
                                    exc_info=True)
            raise MCPError(INTERNAL_ERROR, "The task is gone")
        finally:
            waiting.pop(key, None)

    async def answers_arrived(self, record: TaskRecord) -> None:
        """The client answered some of the task's input requests: wake its handler, here or elsewhere."""
        self.runner.changed(record)
        if self.runner.binding(record.task_id) is not None:
            self.deliver(record)
        elif self.wake_elsewhere is not None:
            await self.wake_elsewhere(record.task_id)

    def deliver(self, record: TaskRecord) -> None:
        """Hand the answers in ``record`` to this process's handlers waiting for them."""
        for key, arrived in self._waiting.get(record.task_id, {}).items():
            answer = record.input_responses.get(key)
            if isinstance(answer, dict) and not arrived.done():
                arrived.set_result(answer)

    def wake_soon(self, task_id: str) -> None:
        """``wake``, from a callback that cannot wait."""
        woken = asyncio.get_running_loop().create_task(self.wake(task_id))
        self._wakes.add(woken)
        woken.add_done_callback(self._wakes.discard)

    async def wake(self, task_id: str) -> None:
        """Another replica took answers for a task running here: read them."""
        binding = self.runner.binding(task_id)
        if binding is None:
            return
        try:
            record = await self.runner.store.get(task_id, binding.owner)
        except Exception:  # the handler re-reads its record on its own before long (RECHECK_SECONDS)
            log.warning("could not read task %s after the client answered its input", task_id, exc_info=True)
            return
        if record is not None:
            self.deliver(record)

    def forget(self, task_id: str) -> None:
        """The task has ended: its handler waits for nothing more."""
        for waiting in self._waiting.pop(task_id, {}).values():
            waiting.cancel()
