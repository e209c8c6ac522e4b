"""The FastMCP peer (``fastmcp==4.1.6``): the same ``word_count`` tool, as FastMCP serves it.

Runs only under the python of FastMCP's own venv (``bench/peers.py`` makes it: FastMCP is not installed in
the project's venv), so nothing here imports wiremcp, orjson or the rest of ``bench``:

    bench/.peers/fastmcp-4.1.6/bin/python -m uvicorn --factory bench.fastmcp_server:json_app    # HTTP
    bench/.peers/fastmcp-4.1.6/bin/python -m bench.fastmcp_server stdio                         # stdio

``json_app``: ``FastMCP.http_app(json_response=True, stateless_http=False)`` (stateful sessions, JSON
answers: the configuration of ``official``; FastMCP builds it on the same SDK, ``mcp==2.3.0``, whose session
manager also sends 2026-07-28 requests to its sessionless handler). ``catalog_json_app``: the same with the
499 ``lookup_NNN`` fillers of ``bench.servers``. The tool is a plain ``def`` with a ``TypedDict`` result, run
on a worker thread (FastMCP's default ``run_in_thread=True``), like the other frameworks'.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable
from typing import Any

from typing_extensions import TypedDict  # pydantic needs it on Python < 3.12

os.environ.setdefault("FASTMCP_CHECK_FOR_UPDATES", "off")
os.environ.setdefault("FASTMCP_SHOW_SERVER_BANNER", "false")

CATALOG_SIZE = 500  # as bench.servers (not imported: it needs wiremcp)


class Counts(TypedDict):
    words: int
    chars: int


def build() -> Any:
    """A FastMCP server with ``word_count`` (``fastmcp`` is imported here: only its own venv has it)."""
    fastmcp = importlib.import_module("fastmcp")
    server = fastmcp.FastMCP("word_count", version="1.0.0")

    def word_count(text: str) -> Counts:
        """Count the words and characters in a text."""
        return {"words": len(text.split()), "chars": len(text)}

    server.tool(word_count, title="Word count",
                annotations={"readOnlyHint": True, "idempotentHint": True, "openWorldHint": False})
    return server


def _filler(name: str) -> Callable[[str, int], str]:
    def lookup(key: str, limit: int = 10) -> str:
        return f"{name}:{key}:{limit}"

    lookup.__name__ = lookup.__qualname__ = name
    return lookup


def build_catalog() -> Any:
    server = build()
    for i in range(1, CATALOG_SIZE):
        name = f"lookup_{i:03d}"
        server.tool(_filler(name), description=f"Look up a key in table {name[-3:]} and return at most `limit` rows.",
                    annotations={"readOnlyHint": True})
    return server


def json_app() -> Any:
    """Stateful Streamable HTTP with JSON answers at /mcp. For ``uvicorn --factory``."""
    return build().http_app(path="/mcp", json_response=True, stateless_http=False)


def catalog_json_app() -> Any:
    """500 tools, stateful, JSON answers. For ``uvicorn --factory``."""
    return build_catalog().http_app(path="/mcp", json_response=True, stateless_http=False)


def main(argv: list[str]) -> int:
    if argv == ["stdio"]:
        build().run("stdio", show_banner=False)
        return 0
    print("usage: python -m bench.fastmcp_server stdio", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
