"""A gateway whose every fixture comes from a remote child: ``examples/everything.py`` launched on stdio
(``wiremcp stdio``) and mounted at the top (no prefix, so that the conformance suite finds the names it expects)."""

from __future__ import annotations

import sys
from pathlib import Path

from wiremcp import MCPServer
from wiremcp.transports import remote

EVERYTHING = Path(__file__).resolve().parents[2] / "examples" / "everything.py"

server = MCPServer("gateway-everything", "1.0.0")
server.mount(remote(command=[sys.executable, "-m", "wiremcp", "stdio", str(EVERYTHING)], name="everything"))
