"""The official SDK's ``word_count`` server, importing nothing but the SDK (``mcp==2.3.0``): for the cold-start
and memory benchmarks, where ``bench.servers`` (which also imports wiremcp, for the load tests) would add
wiremcp's import time and memory to the SDK's.

    python -m bench.official_server stdio                                 # MCPServer.run("stdio")
    python -m uvicorn --factory bench.official_server:json_app            # stateful, JSON answers

The tool is the one of ``bench.servers.build_official``: a plain ``def`` with a ``TypedDict`` result.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from typing_extensions import TypedDict

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer
    from starlette.applications import Starlette


class Counts(TypedDict):
    words: int
    chars: int


def build() -> MCPServer[Any]:
    from mcp.server.mcpserver import MCPServer
    from mcp_types import ToolAnnotations

    server: MCPServer[Any] = MCPServer("word_count", title="Word count", version="1.0.0")

    @server.tool(annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False))
    def word_count(text: str) -> Counts:
        """Count the words and characters in a text."""
        return {"words": len(text.split()), "chars": len(text)}

    return server


def json_app(max_sessions: int | None = 10_000) -> Starlette:
    """Stateful (Mcp-Session-Id) Streamable HTTP, JSON answers: ``official`` of ``bench/http_load.py``."""
    return build().streamable_http_app(json_response=True, stateless_http=False, max_sessions=max_sessions)


def main(argv: list[str]) -> int:
    if argv == ["stdio"]:
        build().run("stdio")
        return 0
    print("usage: python -m bench.official_server stdio", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
