"""A gateway: another server, launched on stdio, served under a prefix beside a tool of the gateway's own.

    uvicorn app:asgi   (with WIREMCP_SERVER=examples/gateway.py)

The word counter (``examples/word_count.py``) runs as one child process of the gateway; its tool is served here
as ``wc_word_count``, under the gateway's policy (its authentication, scopes, rate limits and audit).
"""

import sys
from pathlib import Path

from wiremcp import MCPServer
from wiremcp.transports import remote

server = MCPServer("gateway")

word_count = [sys.executable, "-m", "wiremcp", "stdio", str(Path(__file__).with_name("word_count.py"))]
server.mount(remote(command=word_count, name="word-count"), prefix="wc")


@server.tool
def shout(text: str) -> str:
    """The gateway's own tool: the text in capitals."""
    return text.upper()
