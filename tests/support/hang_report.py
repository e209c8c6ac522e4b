"""Where a test that is about to time out is waiting: shortly before pytest-timeout ends it, the stack of every
asyncio task of every running event loop goes to stderr, which pytest shows with the failure. (pytest-timeout's
own dump shows threads only, and an async test's one thread is always in the selector.)"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import sys
import threading
from collections.abc import Iterator

AHEAD = 2.0
"""Seconds before the test's timeout that the stacks are written."""


@contextlib.contextmanager
def reported_before(timeout: float, test: str) -> Iterator[None]:
    """Within the block, a timer that writes the tasks' stacks ``AHEAD`` seconds before ``timeout``."""
    timer = threading.Timer(max(timeout - AHEAD, timeout / 2), write_tasks, args=(test,))
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def write_tasks(test: str) -> None:
    """The stacks of the tasks of every running loop (read from another thread: for a report, not to act on)."""
    out = sys.stderr
    print(f"--- {test} is about to time out; its asyncio tasks:", file=out)
    for loop in [o for o in gc.get_objects() if isinstance(o, asyncio.AbstractEventLoop)]:
        if not loop.is_running():
            continue
        with contextlib.suppress(RuntimeError):  # the set of tasks changed while it was read
            for task in list(asyncio.all_tasks(loop)):
                print(f"- {task!r}", file=out)
                task.print_stack(limit=12, file=out)
    out.flush()
