"""``eager.start``: a coroutine's first step runs at once; a task is made only when it has to wait."""

from __future__ import annotations

import asyncio
import contextvars

import pytest

from wiremcp import eager

_VAR: contextvars.ContextVar[str] = contextvars.ContextVar("_VAR", default="unset")


async def test_a_coroutine_that_does_not_wait_ends_in_its_first_step_without_a_task() -> None:
    ran: list[str] = []

    async def quick() -> int:
        ran.append("ran")
        return 7

    before = asyncio.all_tasks()
    started = eager.start(quick())
    assert ran == ["ran"]  # already, before anything was awaited
    assert isinstance(started, eager.Finished)
    assert started.result() == 7
    assert asyncio.all_tasks() == before


async def test_an_exception_in_the_first_step_is_raised_by_result() -> None:
    async def broken() -> None:
        raise ValueError("nope")

    started = eager.start(broken())
    assert isinstance(started, eager.Finished)
    with pytest.raises(ValueError, match="nope"):
        started.result()


async def test_a_coroutine_that_waits_goes_on_in_a_task_with_the_context_of_its_first_step() -> None:
    gate = asyncio.get_running_loop().create_future()
    seen: list[object] = []
    _VAR.set("caller")

    async def waits() -> str:
        token = _VAR.set("request")
        try:
            seen.append(asyncio.current_task())
            value: str = await gate
            await asyncio.sleep(0)  # a bare yield, too
            seen.append(asyncio.current_task())
            return value + _VAR.get()
        finally:
            _VAR.reset(token)  # set in the first step, reset in the task: the same context

    started = eager.start(waits())
    assert isinstance(started, asyncio.Task)
    assert seen == [asyncio.current_task()]  # the first step ran in the caller's task
    assert _VAR.get() == "caller"  # and in a copy of its context
    gate.set_result("answer from ")
    assert await started == "answer from request"
    assert seen[1] is started


async def test_cancelling_the_task_reaches_the_coroutine_where_it_waits() -> None:
    cleaned = asyncio.Event()

    async def waits_forever() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            cleaned.set()

    started = eager.start(waits_forever())
    assert isinstance(started, asyncio.Task)
    await asyncio.sleep(0)
    started.cancel()
    with pytest.raises(asyncio.CancelledError):
        await started
    assert cleaned.is_set()


async def test_a_coroutine_may_handle_its_cancellation_and_return() -> None:
    async def stubborn() -> str:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            asyncio.current_task().uncancel()  # type: ignore[union-attr]
            await asyncio.sleep(0)
            return "handled"
        return "not cancelled"

    started = eager.start(stubborn())
    assert isinstance(started, asyncio.Task)
    await asyncio.sleep(0)
    started.cancel()
    assert await started == "handled"


async def test_an_exception_after_a_wait_is_the_tasks() -> None:
    async def fails_later() -> None:
        await asyncio.sleep(0)
        raise KeyError("later")

    started = eager.start(fails_later())
    assert isinstance(started, asyncio.Task)
    with pytest.raises(KeyError, match="later"):
        await started


async def test_a_cancellation_before_the_tasks_first_step_reaches_the_coroutine() -> None:
    cleaned: list[str] = []

    async def waits() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            cleaned.append("cleaned")

    started = eager.start(waits())
    assert isinstance(started, asyncio.Task)
    started.cancel()  # the task has not run yet
    with pytest.raises(asyncio.CancelledError):
        await started
    assert cleaned == ["cleaned"]

