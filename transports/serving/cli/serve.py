"""``wiremcp stdio``, ``wiremcp http`` and ``wiremcp dev``: serve a server named by a spec."""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from wiremcp.logs import setup_logging
from wiremcp.server import MCPServer
from wiremcp.transports.serving.cli.documentation import page
from wiremcp.transports.serving.loader import load_server, resolve_file, spec_file
from wiremcp.transports.serving.settings import DEFAULT_SERVER, ConfigError, Settings

SPEC_HELP = f"MODULE[:ATTR] or path/to/server.py[:ATTR] (default: $WIREMCP_SERVER, else {DEFAULT_SERVER})"
SETTINGS_EPILOG = f"Every setting is an environment variable WIREMCP_*: {page('reference/settings/')}"
INSPECTOR = "@modelcontextprotocol/inspector"
"""The MCP Inspector's npm package, run with ``npx`` by ``wiremcp dev``."""


def register(commands: argparse._SubParsersAction[Any]) -> None:
    stdio = commands.add_parser("stdio", help="serve on stdin/stdout, as hosts launch servers",
                                description="Serve on stdin/stdout: only MCP messages reach stdout, logs go to stderr.",
                                epilog=SETTINGS_EPILOG)
    _spec_arguments(stdio)
    stdio.set_defaults(run=run_stdio)

    http = commands.add_parser(
        "http", help="serve Streamable HTTP at /mcp (both protocol eras)",
        usage="wiremcp http [-h] [SPEC] [--app-dir DIR] [--host HOST] [--port PORT] [--reload] [-- COMMAND ARGS...]",
        description="Serve a server over Streamable HTTP at /mcp, in both protocol eras. After --, any stdio MCP "
                    "server's command instead: it is launched once, and served with this server's "
                    "authentication, limits, audit, metrics and probes in front.",
        epilog=SETTINGS_EPILOG)
    _spec_arguments(http)
    http.set_defaults(upstream=None)
    http.add_argument("--host", default="127.0.0.1", help="the interface to listen on (default: %(default)s)")
    http.add_argument("--port", type=int, default=8000, help="(default: %(default)s)")
    http.add_argument("--reload", action="store_true",
                      help="restart when a source file changes (development; watches the server's folder)")
    http.set_defaults(run=run_http)

    dev = commands.add_parser("dev", help="open the server in the MCP Inspector (needs Node.js)",
                              description=f"Start the MCP Inspector (npx {INSPECTOR}) with this server on stdio.")
    _spec_arguments(dev)
    dev.add_argument("--host", default="127.0.0.1",
                     help="the interface the Inspector listens on (default: %(default)s, this machine only; "
                          "0.0.0.0 opens it, and the server it runs, to the network)")
    dev.set_defaults(run=run_dev)


def stdio_command(spec: str, app_dir: str | None = None) -> list[str]:
    """This interpreter serving ``spec`` on stdio (``python -m wiremcp stdio``) from any working directory:
    a file spec made absolute, and ``app_dir`` too."""
    return [sys.executable, "-m", "wiremcp", "stdio", resolve_file(spec),
            *(["--app-dir", os.path.abspath(app_dir)] if app_dir else [])]


def _spec_arguments(command: argparse.ArgumentParser) -> None:
    command.add_argument("server", nargs="?", metavar="SPEC", help=SPEC_HELP)
    command.add_argument("--app-dir", metavar="DIR",
                         help="look for a MODULE:ATTR spec's module in DIR too (as uvicorn's --app-dir)")


def _spec(args: argparse.Namespace, settings: Settings) -> str:
    spec: str = args.server or settings.server
    return spec


def _server(args: argparse.Namespace) -> Callable[[Settings], MCPServer]:
    """What loads the server the command names (loaded once the wire is taken: ``deployment.serve``): the spec's,
    or a stdio server's command (``wiremcp http -- COMMAND ARGS...``) served as a remote child."""
    upstream: list[str] | None = getattr(args, "upstream", None)
    if upstream is None:
        return lambda settings: load_server(_spec(args, settings), args.app_dir)
    if args.server is not None or args.reload:
        raise ConfigError("wiremcp http serves a SPEC or a command after --, not both (and --reload watches a SPEC's "
                          "files)")
    if not upstream:
        raise ConfigError("wiremcp http --: give the command of the stdio server to serve after --, e.g. "
                          "wiremcp http -- npx -y @modelcontextprotocol/server-everything")
    if shutil.which(upstream[0]) is None:
        raise ConfigError(f"wiremcp http --: cannot run {upstream[0]}: it is not a program on PATH")
    from wiremcp.transports.gateway import remote

    return lambda settings: remote(command=upstream)


def run_stdio(args: argparse.Namespace) -> int:
    from wiremcp.transports.serving import deployment  # the composition root, imported only to serve

    deployment.serve(_server(args), "stdio")
    return 0


def run_http(args: argparse.Namespace) -> int:
    from wiremcp.transports.serving import deployment

    if not args.reload:
        deployment.serve(_server(args), "http", host=args.host, port=args.port)
        return 0
    settings = Settings.from_env()
    setup_logging(settings.log_level, settings.log_format)
    spec = resolve_file(_spec(args, settings))
    load_server(spec, args.app_dir)  # a bad spec fails here, with one line, not in uvicorn's child process
    # uvicorn reloads by importing an app by name in a fresh process: wiremcp:asgi, told the spec by its
    # environment (the module search path, app_dir included, goes to the child with it).
    os.environ["WIREMCP_SERVER"] = spec
    file = spec_file(spec)
    watched = str(file.parent) if file is not None else os.getcwd()
    deployment.serve_http_reloading(host=args.host, port=args.port, settings=settings,
                                    watch=[watched, *([args.app_dir] if args.app_dir else [])])
    return 0


def run_dev(args: argparse.Namespace) -> int:
    settings = Settings.from_env()
    npx = shutil.which("npx")
    if npx is None:
        raise ConfigError("wiremcp dev runs the MCP Inspector with npx, which is not on PATH: install Node.js 22 "
                          "or newer (https://nodejs.org), or serve with `wiremcp http` and connect another client")
    spec = resolve_file(_spec(args, settings))
    load_server(spec, args.app_dir)  # a bad spec fails here, not inside the Inspector
    # The Inspector starts the server with a minimal environment: the settings are passed on explicitly.
    env_flags = [flag for key, value in sorted(os.environ.items()) if key.startswith("WIREMCP_")
                 for flag in ("-e", f"{key}={value}")]
    # HOST: the interface the Inspector's two listeners (its page and its proxy) bind.
    inspector = subprocess.Popen([npx, "-y", INSPECTOR, *env_flags, "--", *stdio_command(spec, args.app_dir)],
                                 env={**os.environ, "HOST": args.host}, start_new_session=True)
    return run_process_group(inspector)


def run_process_group(leader: subprocess.Popen[bytes]) -> int:
    """Wait for ``leader`` (started in a session of its own, ``start_new_session=True``), passing Ctrl-C and
    SIGTERM on to its whole process group; however this process ends, the group ends with it: npx, the
    Inspector's node processes and the server they launched (SIGTERM, then SIGKILL after ``GROUP_STOP_BOUND``)."""
    previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        return leader.wait()
    except KeyboardInterrupt:
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
        _stop_group(leader)


GROUP_STOP_BOUND = 5.0
"""Seconds the Inspector's processes get to end after SIGTERM before they are killed."""


class _Terminated(KeyboardInterrupt):
    """SIGTERM, taken as Ctrl-C is: the ``finally`` that stops the process group runs."""


def _terminated(signum: int, frame: object) -> None:
    raise _Terminated


def _stop_group(leader: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the group, SIGKILL to what is left of it after ``GROUP_STOP_BOUND``."""
    group = leader.pid  # the leader of a new session leads its process group too
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(group, sig)
        except ProcessLookupError:
            break  # every process of the group has ended
        if _group_ended(leader, GROUP_STOP_BOUND):
            break


def _group_ended(leader: subprocess.Popen[bytes], bound: float) -> bool:
    """Whether no process of ``leader``'s group is left within ``bound`` seconds (the leader is reaped here;
    the others, once their parents have gone, by init)."""
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        if leader.poll() is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                leader.wait(0.05)
        else:
            time.sleep(0.05)  # the rest of the group is not this process's to wait for
        try:
            os.killpg(leader.pid, 0)
        except ProcessLookupError:
            return True
    return False
