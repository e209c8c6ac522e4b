"""A server's lifespan: what it opens before it serves and closes after (a database pool, a client of another
service), run once per process by whichever way it is served (the HTTP app's lifespan, ``wiremcp stdio``, the
in-memory ``Client``), for the served server and every server mounted in it, the mounted ones first.

``MCPServer(lifespan=fn)``: ``fn(server)`` returns an async context manager (write it with
``contextlib.asynccontextmanager``); what it yields is ``server.lifespan_state``, and a handler's
``ctx.lifespan_state``, while it runs. Several ways of serving one server at once (tests with two clients) share
one run of it: the first to start enters it, the last to stop leaves it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any

from wiremcp.mount import mounted_first

if TYPE_CHECKING:
    from wiremcp.server import MCPServer

Lifespan = Callable[["MCPServer"], AbstractAsyncContextManager[Any]]
"""What ``MCPServer(lifespan=...)`` takes: the server in, an async context manager out."""


class Lifespans:
    """The lifespans of a served server and of the servers mounted in it, entered once however many hold them."""

    def __init__(self, server: MCPServer) -> None:
        self.server = server
        self._holders = 0
        self._stack: contextlib.AsyncExitStack | None = None
        self._lock = asyncio.Lock()

    @property
    def running(self) -> bool:
        return self._stack is not None

    async def enter(self) -> None:
        """Hold them: entered now if nobody held them. A lifespan that fails to start leaves the ones started
        before it closed again, and raises."""
        async with self._lock:
            if self._holders == 0:
                stack = contextlib.AsyncExitStack()
                try:
                    for served in self._servers():
                        if served.lifespan is not None:
                            state = await stack.enter_async_context(served.lifespan(served))
                            served.lifespan_state = state
                            stack.callback(setattr, served, "lifespan_state", None)
                except BaseException:
                    await stack.aclose()
                    raise
                self._stack = stack
            self._holders += 1

    async def exit(self) -> None:
        """Let go: left when the last holder lets go."""
        async with self._lock:
            if self._holders == 0:
                return
            self._holders -= 1
            if self._holders == 0 and self._stack is not None:
                stack, self._stack = self._stack, None
                await stack.aclose()

    @contextlib.asynccontextmanager
    async def held(self) -> AsyncIterator[None]:
        await self.enter()
        try:
            yield
        finally:
            await self.exit()

    def _servers(self) -> Iterator[MCPServer]:
        """The mounted servers, depth first, then the served one: a parent's lifespan may use its children's."""
        return mounted_first(self.server)
