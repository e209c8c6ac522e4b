"""A remote child's tool call that the upstream runs as a task, followed to its end for the caller
(``wiremcp.transports.upstream_link``).

The gateway serves a remote tool as a task of its own (``task_start="handler"``): the call is sent on, and when
the upstream answers with a task, the gateway's call becomes a task too (``ctx.start_task``) if its caller can
take one, and the gateway follows the upstream's task to its end, whose outcome is the call's:

- **2025-11-25** (the upstream's ``params.task``): ``tasks/result`` waits for the outcome; what the upstream asks
  meanwhile (elicitation, sampling, roots, tagged with the task) comes on that request and is asked of the
  caller, its progress and log messages too.
- **2026-07-28** (the ``io.modelcontextprotocol/tasks`` extension): ``tasks/get`` is polled at the upstream's
  interval; its ``inputRequests`` are asked of the caller, each once, and answered with ``tasks/update``.

When the caller cancels (``tasks/cancel`` of the gateway's task, or the request going away), the upstream's task
is cancelled too, also when the caller cancels before the upstream's answer to the call has told its id
(``answer``). The caller never sees the upstream's task id: the gateway's task is the one it polls.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Any

from wiremcp.context import Context
from wiremcp.errors import INTERNAL_ERROR, MCPError
from wiremcp.input_required import INPUT_METHODS
from wiremcp.types import JSONObject

if TYPE_CHECKING:
    from wiremcp.transports.upstream_link import UpstreamLink

log = logging.getLogger("wiremcp.gateway")

POLL_BOUNDS = (0.05, 5.0)
"""The shortest and the longest wait between two ``tasks/get`` of an upstream's task, whatever it suggests."""
DEFAULT_POLL = 0.5
"""The wait when the upstream suggests none."""
RESULT_WAIT = 86_400.0
"""How long a ``tasks/result`` may wait for a 2025-11-25 task's outcome (the longest task lifetime we allow)."""


def created_task(result: JSONObject) -> JSONObject | None:
    """The task an upstream's answer to ``tools/call`` created, in either era's shape, or None (a result)."""
    if result.get("resultType") == "task" and isinstance(result.get("taskId"), str):
        return result
    task = result.get("task")
    if isinstance(task, dict) and isinstance(task.get("taskId"), str) and "content" not in result:
        return task
    return None


async def answer(link: UpstreamLink, params: JSONObject, ctx: Context) -> JSONObject:
    """The upstream's answer to a ``tools/call`` (``params``) that may create a task there. A caller may cancel
    the call before that answer comes (a 2025-11-25 caller's task is the gateway's from the start), when the
    upstream may have created its task already: its id comes only with the answer, so the request is not
    abandoned then. Its answer is awaited on its own (within the request's timeout), and the task it created, if
    any, is cancelled."""
    sending = asyncio.create_task(link.call("tools/call", params, ctx))
    try:
        return await asyncio.shield(sending)
    except asyncio.CancelledError:
        link.background(_cancel_created(link, sending, ctx))
        raise


async def _cancel_created(link: UpstreamLink, sending: asyncio.Task[JSONObject], ctx: Context) -> None:
    try:
        result = await sending
    except Exception:  # no answer, or an error: no task to cancel (a failure is logged where it is seen)
        return
    task = created_task(result)
    if task is not None:
        await _cancelled(link, str(task["taskId"]), ctx)


async def follow(link: UpstreamLink, task: JSONObject, ctx: Context) -> JSONObject:
    """The outcome of the upstream's ``task``, as the tool call's result (or its error raised), the call having
    become the caller's task if it can."""
    task_id = str(task["taskId"])
    try:
        await ctx.start_task()  # inside: a call cancelled while it becomes a task cancels the upstream's too
        if task.get("resultType") == "task":
            return await _poll(link, task_id, task, ctx)
        return await link.request("tasks/result", {"taskId": task_id}, ctx, timeout=RESULT_WAIT)
    except asyncio.CancelledError:
        _cancel(link, task_id, ctx)
        raise


async def _poll(link: UpstreamLink, task_id: str, seen: JSONObject, ctx: Context) -> JSONObject:
    """A 2026-07-28 task followed by ``tasks/get`` until it ends. Its requests for input are asked of the caller
    all at once, each sent on with ``tasks/update`` as soon as it is answered, while the task is still followed
    (it may end, or be cancelled, before the caller answers)."""
    asked: set[str] = set()
    asking: set[asyncio.Task[None]] = set()
    woken = asyncio.Event()
    try:
        while True:
            status = seen.get("status")
            if status == "completed":
                result = seen.get("result")
                return result if isinstance(result, dict) else {"content": []}
            if status == "failed":
                raise _error(seen.get("error"), link.name)
            if status == "cancelled":
                raise MCPError(INTERNAL_ERROR, f"upstream {link.name} cancelled the task")
            requests = seen.get("inputRequests") if status == "input_required" else None
            for key, ask in (requests.items() if isinstance(requests, dict) else ()):
                if key not in asked and isinstance(ask, dict) and ask.get("method") in INPUT_METHODS:
                    asked.add(key)
                    asking.add(asyncio.create_task(_answer(link, task_id, key, ask, ctx, woken)))
            for done in [task for task in asking if task.done()]:
                asking.discard(done)
                done.result()  # the caller could not be asked: the task fails with why
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(_interval(seen)):
                    await woken.wait()
            woken.clear()
            seen = await link.request("tasks/get", {"taskId": task_id})
    finally:
        for task in asking:
            task.cancel()


async def _answer(link: UpstreamLink, task_id: str, key: str, ask: JSONObject, ctx: Context,
                  woken: asyncio.Event) -> None:
    try:
        answer = await ctx.request(str(ask["method"]), _params(ask.get("params")))
        await link.request("tasks/update", {"taskId": task_id, "inputResponses": {key: answer}})
    finally:
        woken.set()


def _interval(task: JSONObject) -> float:
    given = task.get("pollIntervalMs")
    if not isinstance(given, int | float) or isinstance(given, bool):
        return DEFAULT_POLL
    return min(max(given / 1000, POLL_BOUNDS[0]), POLL_BOUNDS[1])


def _params(given: Any) -> JSONObject | None:
    return given if isinstance(given, dict) else None


def _error(given: Any, name: str) -> MCPError:
    error = given if isinstance(given, dict) else {}
    code = error.get("code")
    return MCPError(code if isinstance(code, int) and not isinstance(code, bool) else INTERNAL_ERROR,
                    str(error.get("message") or f"upstream {name}: the task failed"), error.get("data"))


def _cancel(link: UpstreamLink, task_id: str, ctx: Context) -> None:
    """Cancel the upstream's task as its caller (the task is theirs there too), without waiting (the caller's
    cancellation is not held up by it)."""
    link.background(_cancelled(link, task_id, ctx))


async def _cancelled(link: UpstreamLink, task_id: str, ctx: Context) -> None:
    with contextlib.suppress(Exception):
        await link.request("tasks/cancel", {"taskId": task_id}, ctx, relayed=False)
