"""The ``mcpwire`` command: ``mcpwire stdio [MODULE:ATTR]`` and ``mcpwire http [MODULE:ATTR]``."""

from __future__ import annotations

import argparse
import sys

from app.loader import load_server
from app.logs import setup_logging
from app.settings import Settings


def main(argv: list[str] | None = None) -> int:
    settings = Settings.from_env()
    parser = argparse.ArgumentParser(prog="mcpwire", description="Serve an MCP server.")
    sub = parser.add_subparsers(dest="command", required=True)
    stdio = sub.add_parser("stdio", help="serve on stdin/stdout")
    stdio.add_argument("server", nargs="?", default=settings.server, help="MODULE:ATTR (default: %(default)s)")
    http = sub.add_parser("http", help="serve Streamable HTTP")
    http.add_argument("server", nargs="?", default=settings.server, help="MODULE:ATTR (default: %(default)s)")
    http.add_argument("--host", default="127.0.0.1")
    http.add_argument("--port", type=int, default=8000)
    args = parser.parse_args(argv)
    # The transports are wired in the composition root, imported only now.
    from app import deployment

    # On stdio, stdin and stdout are the wire: taken before the server's module is imported, so that
    # neither a print() at import time nor a child process started later can write to or read from it.
    if args.command == "stdio":
        deployment.claim_stdio()
    setup_logging(settings.log_level, settings.log_format)  # stderr only
    server = load_server(args.server)
    if args.command == "stdio":
        deployment.serve_stdio(server, settings)  # on the wire claimed above
    else:
        deployment.serve_http(server, host=args.host, port=args.port, settings=settings)
    return 0


if __name__ == "__main__":
    sys.exit(main())
