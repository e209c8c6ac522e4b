"""The one shutdown sequence of every transport: stdio at EOF or SIGTERM, HTTP at SIGTERM (its drain) and
at the end of its lifespan.

1. ``subscriptions/listen`` requests answer and end (the bus ends), and the transport stops taking work
   (``quiesce``: over HTTP ``initialize`` answers 503 and GET streams close, for clients to reconnect
   elsewhere);
2. requests and tasks in flight get ``grace`` seconds to finish (``running``: what is in flight now);
3. tasks still running here end, failed, saying why (no poller waits for a task that will never end).

What is left (streams, sessions, the connection) the transport closes after.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from wiremcp.server import MCPServer

async def shut_down(server: MCPServer, *, grace: float, running: Callable[[], Sequence[asyncio.Future[Any]]],
                    quiesce: Callable[[], None] | None = None) -> int:
    """Run the sequence; returns how many requests were still running when ``grace`` ran out."""
    runtime = server.runtime
    runtime.bus.end_all()
    if quiesce is not None:
        quiesce()
    deadline = time.monotonic() + grace

    def unfinished() -> list[asyncio.Future[Any]]:
        return [work for work in running() if not work.done()]

    while (waiting := unfinished()) and (left := deadline - time.monotonic()) > 0:
        await asyncio.wait(waiting, timeout=left, return_when=asyncio.ALL_COMPLETED)
    still = len(unfinished())
    if runtime.has_task_runner:
        with contextlib.suppress(Exception):
            await runtime.task_runner.shutdown()
    return still
