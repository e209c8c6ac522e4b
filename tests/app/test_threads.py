"""``run_sync``: blocking functions on daemon worker threads, handed over in batches."""

from __future__ import annotations

import asyncio
import contextvars
import threading

import pytest

from wiremcp.threads import run_sync

_VAR: contextvars.ContextVar[str] = contextvars.ContextVar("_VAR", default="unset")


async def test_results_come_back_to_their_callers() -> None:
    results = await asyncio.gather(*(run_sync(lambda i=i: i * i) for i in range(2000)))
    assert results == [i * i for i in range(2000)]


async def test_exceptions_come_back_to_their_callers() -> None:
    def fail() -> None:
        raise ValueError("nope")

    with pytest.raises(ValueError, match="nope"):
        await run_sync(fail)


async def test_a_call_runs_on_a_daemon_thread_with_the_callers_context() -> None:
    _VAR.set("caller")

    def where() -> tuple[threading.Thread, str]:
        return threading.current_thread(), _VAR.get()

    thread, value = await run_sync(where)
    assert thread is not threading.current_thread()
    assert thread.daemon
    assert value == "caller"


async def test_calls_queued_behind_blocking_ones_still_run() -> None:
    """Three calls queued at once that can only finish together: a call blocked on a worker must not
    keep the others queued (more workers are woken when calls stop finishing)."""
    barrier = threading.Barrier(3, timeout=10)
    results = await asyncio.wait_for(asyncio.gather(*(run_sync(barrier.wait) for _ in range(3))), 20)
    assert sorted(results) == [0, 1, 2]


async def test_the_event_loop_runs_while_a_call_blocks() -> None:
    release = threading.Event()
    blocked = asyncio.ensure_future(run_sync(release.wait, 10))
    assert await run_sync(lambda: "next") == "next"  # not stuck behind the blocked call
    assert not blocked.done()
    release.set()
    assert await blocked is True


def test_calls_from_event_loops_in_several_threads() -> None:
    """Each loop gets its own results, whichever worker ran the call."""
    out: dict[int, list[int]] = {}

    def serve(n: int) -> None:
        async def main() -> list[int]:
            return list(await asyncio.gather(*(run_sync(lambda i=i: n * 1000 + i) for i in range(200))))

        out[n] = asyncio.run(main())

    threads = [threading.Thread(target=serve, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert out == {n: [n * 1000 + i for i in range(200)] for n in range(4)}
