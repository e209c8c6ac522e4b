"""A server with a lifespan that notes, in the file ``LIFESPAN_LOG`` names, when it starts and stops, and whose
tool answers with what the lifespan yielded: for the tests that serve it in another process."""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path

from wiremcp import Context, MCPServer


def _note(line: str) -> None:
    with Path(os.environ["LIFESPAN_LOG"]).open("a") as log:
        log.write(line + "\n")


@contextlib.asynccontextmanager
async def opened(server: MCPServer) -> AsyncIterator[dict[str, str]]:
    _note(f"started {server.name}")
    try:
        yield {"pool": "open"}
    finally:
        _note(f"stopped {server.name}")


server = MCPServer("with-lifespan", lifespan=opened)


@server.tool
async def pool(ctx: Context) -> str:
    """What the lifespan opened."""
    return str(ctx.lifespan_state["pool"])
