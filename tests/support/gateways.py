"""What the tests of a gateway's remote children share: the gateway that mounts one under ``wc``, the upstream
fixture server (``tests/support/http_fixture_server.py``) launched on stdio or reached over HTTP, and the eras
the gateway speaks to it in."""

from __future__ import annotations

import sys

from tests.support.http import UvicornProcess
from tests.support.http_fixture_server import FIXTURE_SERVER
from wiremcp import MCPServer
from wiremcp.transports import remote

BOUND = 10.0
"""An upper bound for what the tests wait for, never a sleep."""
FIXTURE_STDIO = [sys.executable, "-m", "wiremcp", "stdio", FIXTURE_SERVER]
"""The upstream fixture server, launched on stdio."""
ERAS = [("http", "auto"), ("http", "2025-11-25"), ("stdio", "auto"), ("stdio", "2025-11-25")]
"""Where the upstream is and the era the gateway speaks to it (auto: the stateless era, which it offers)."""


def gateway(child: MCPServer) -> MCPServer:
    """A gateway serving ``child`` under the prefix ``wc``."""
    server = MCPServer("gateway")
    server.mount(child, prefix="wc")
    return server


def upstream(over: str, http_server: UvicornProcess, protocol: str = "auto") -> MCPServer:
    """The upstream fixture server as a remote child: over HTTP (``http_server``) or launched on stdio."""
    if over == "http":
        return remote(http_server.url, protocol=protocol)
    return remote(command=FIXTURE_STDIO, protocol=protocol)
