"""The ``wiremcp`` command (also ``python -m wiremcp``): serve a server, hand it to a host, talk to one.

Each command lives in its own module, which adds its parser here and runs it (``register``); the
composition root and the client are imported by the commands that need them, never by this one.
A user's mistake (a spec that names no server, a bad setting) is one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

from wiremcp.transports.serving.cli import bridge, hosts, inspect, serve
from wiremcp.transports.serving.cli.documentation import SITE
from wiremcp.transports.serving.settings import ConfigError

Command = Callable[[argparse.Namespace], int]
"""What a command runs: the parsed arguments in, the exit status out."""


def package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version  # only when asked for: not to serve

    try:
        return version("wiremcp")
    except PackageNotFoundError:  # run from a tree that was never installed
        return "unknown"


class _Version(argparse.Action):
    """``--version``: argparse's, with the version looked up only when the option is given."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="show the version and exit", **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: str | Sequence[Any] | None, option_string: str | None = None) -> None:
        sys.stdout.write(f"wiremcp {package_version()}\n")
        parser.exit()


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="wiremcp", description="Serve MCP servers, install them in hosts, "
                                  "list and call what a server offers.",
                                  epilog=f"Documentation: {SITE} (each command's options: wiremcp COMMAND --help)")
    top.add_argument("--version", action=_Version)
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in (serve, bridge, inspect, hosts):
        module.register(commands)
    return top


def main(argv: list[str] | None = None) -> int:
    top = parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    upstream: list[str] | None = None
    if "--" in argv:  # `wiremcp http -- COMMAND ARGS...`: the words after -- are a command to launch, not ours
        upstream, argv = argv[argv.index("--") + 1:], argv[:argv.index("--")]
    args, rest = top.parse_known_args(argv)
    if upstream is not None:
        if not hasattr(args, "upstream"):
            top.error(f"wiremcp {args.command} takes no command after --; `wiremcp http -- COMMAND ARGS...` serves "
                      "a stdio server over HTTP")
        args.upstream = upstream
    if rest and isinstance(getattr(args, "pairs", None), list) and all("=" in r and r[0] != "-" for r in rest):
        args.pairs += rest  # `call ... TOOL --json a=1`: key=value pairs after an option are pairs still
    elif rest:
        top.error(f"unrecognized arguments: {' '.join(rest)}")
    run: Command = args.run
    try:
        return run(args)
    except ConfigError as exc:
        exc.exit()
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
