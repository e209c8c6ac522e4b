"""``wiremcp install HOST SPEC``: write a host's configuration so that it launches this server; ``wiremcp install
HOST --remote URL``: so that it launches ``wiremcp bridge URL``, a remote server bridged onto stdio.

A *host* (Claude Desktop, Claude Code, Cursor, VS Code) starts each MCP server it knows as a child
process on stdio, from an *entry* in a JSON file of its own: a command, its arguments and an
environment. The entry written here runs this environment's interpreter by its absolute path,
``python -m wiremcp stdio SPEC``, with a spec that resolves from any working directory (hosts start
servers from theirs, often ``/``): a file made absolute, a module found only in the working directory
given with ``--app-dir``. The spec is loaded first, so that a bad one fails here, in one line.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import re
import stat
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wiremcp.transports.serving.cli.documentation import page
from wiremcp.transports.serving.cli.serve import stdio_command
from wiremcp.transports.serving.loader import load_server, resolve_file, spec_file
from wiremcp.transports.serving.settings import ConfigError

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _user_config(*parts: str) -> Path:
    """A per-user application folder's file: macOS Application Support, Windows %APPDATA%, else XDG."""
    home = Path.home()
    if sys.platform == "darwin":
        return home.joinpath("Library", "Application Support", *parts)
    if sys.platform == "win32":
        return Path(os.environ.get("APPDATA") or home / "AppData" / "Roaming", *parts)
    return Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config", *parts)


@dataclass(frozen=True)
class Host:
    """Where a host keeps its servers: the file, the key of the servers object, and what an entry holds."""

    label: str
    key: str
    typed: bool  # the entry says ``"type": "stdio"``
    file: Callable[[], Path]
    reload: str


HOSTS = {
    "claude-desktop": Host("Claude Desktop", "mcpServers", False,
                           lambda: _user_config("Claude", "claude_desktop_config.json"), "restart Claude Desktop"),
    "claude-code": Host("Claude Code", "mcpServers", True, lambda: Path.home() / ".claude.json",
                        "start a new Claude Code session"),
    "cursor": Host("Cursor", "mcpServers", False, lambda: Path.home() / ".cursor" / "mcp.json", "restart Cursor"),
    "vscode": Host("VS Code", "servers", True, lambda: _user_config("Code", "User", "mcp.json"),
                   "reload the VS Code window"),
}
PRINT_ONLY = "json"
"""The host that writes no file: the entry goes to stdout, to paste under a host's servers object."""


def register(commands: argparse._SubParsersAction[Any]) -> None:
    install = commands.add_parser(
        "install", help="add this server to a host's configuration (Claude Desktop, Claude Code, Cursor, VS Code)",
        description="Write an entry that launches this server on stdio with this environment's Python "
                    "into a host's configuration file, keeping the rest of the file; `json` prints it instead.",
        epilog=f"Hosts and their configuration files: {page('hosts/')}")
    install.add_argument("host", choices=[*HOSTS, PRINT_ONLY], metavar="HOST",
                         help=f"one of {', '.join([*HOSTS, PRINT_ONLY])}")
    install.add_argument("server", metavar="SPEC", nargs="?", help="MODULE[:ATTR] or path/to/server.py[:ATTR]")
    install.add_argument("--remote", metavar="URL",
                         help="instead of a SPEC, a remote server's Streamable HTTP URL: the entry launches "
                              "`wiremcp bridge URL` (for hosts that only launch commands)")
    install.add_argument("--header", action="append", default=[], metavar="'NAME: VALUE'",
                         help="with --remote: an HTTP header the bridge sends with every request (repeatable)")
    install.add_argument("--name", help="the server's key in the host's configuration (default: the server's name)")
    install.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                         help="an environment variable for the server (repeatable)")
    install.add_argument("--env-file", metavar="FILE", help="environment variables from a dotenv-style file")
    install.add_argument("--config", metavar="PATH", help="the host's configuration file (default: the host's own)")
    install.add_argument("--app-dir", metavar="DIR",
                         help="look for a MODULE:ATTR spec's module in DIR too; the entry passes it on")
    install.set_defaults(run=run_install)


def run_install(args: argparse.Namespace) -> int:
    if args.host == PRINT_ONLY and args.config:
        raise ConfigError("the json host writes no file (it prints the entry): drop --config")
    if (args.server is None) == (args.remote is None):
        raise ConfigError("wiremcp install takes a SPEC or --remote URL: one of them")
    if args.header and args.remote is None:
        raise ConfigError("--header goes with --remote URL (a launched server reads its environment)")
    env = {**(read_env_file(Path(args.env_file)) if args.env_file else {}), **parse_env(args.env)}
    if args.remote is not None:
        name, (command, *server_args) = _bridged(args)
    else:
        spec = resolve_file(args.server)
        os.environ.update(env)  # the server is loaded as the host will run it
        with contextlib.redirect_stdout(sys.stderr):  # a print() at import time must not reach `json`'s output
            server = load_server(spec, args.app_dir)
        name = args.name if args.name is not None else server.name
        command, *server_args = stdio_command(spec, _app_dir(spec, args.app_dir))
    if not name.strip():
        raise ConfigError("--name must not be empty")
    if args.host == PRINT_ONLY:
        sys.stdout.write(json.dumps({name: entry(command, server_args, env)}, indent=2) + "\n")
        return 0
    host = HOSTS[args.host]
    path = Path(args.config).expanduser() if args.config else host.file()
    replaced = write_entry(path, host.key, name, entry(command, server_args, env, typed=host.typed))
    sys.stderr.write(f"wiremcp: {'replaced' if replaced else 'added'} server {name!r} in {path} "
                     f"({host.label}): {host.reload} to pick it up\n")
    return 0


def _bridged(args: argparse.Namespace) -> tuple[str, list[str]]:
    """The name and command of an entry that bridges the remote server ``--remote`` names onto stdio: this
    interpreter running ``wiremcp bridge URL``, with the headers given (checked here, as the bridge would)."""
    from urllib.parse import urlsplit

    from wiremcp.transports.serving.cli.inspect import header_lines
    from wiremcp.transports.upstream import is_url

    url: str = args.remote
    if not is_url(url):
        raise ConfigError(f"--remote {url!r} is not an http:// or https:// URL")
    header_lines(args.header)
    name = args.name if args.name is not None else (urlsplit(url).hostname or url)
    headers = [word for line in args.header for word in ("--header", line)]
    return name, [sys.executable, "-m", "wiremcp", "bridge", url, *headers]


def entry(command: str, args: list[str], env: dict[str, str], *, typed: bool = False) -> dict[str, Any]:
    """A host's entry for a stdio server; ``env`` only when there is one."""
    out: dict[str, Any] = {"type": "stdio"} if typed else {}
    out |= {"command": command, "args": args}
    if env:
        out["env"] = env
    return out


def _app_dir(spec: str, app_dir: str | None) -> str | None:
    """The folder to pass as ``--app-dir``: the working directory (or DIR) when a module spec's module is
    found only thanks to it, else the DIR given; None for a file, loaded from its own folder."""
    if spec_file(spec) is not None:
        return None
    where = _import_root(spec.partition(":")[0].partition(".")[0])
    for directory in (os.getcwd(), app_dir):
        if directory and where is not None and os.path.realpath(where) == os.path.realpath(directory):
            return directory
    return app_dir


def _import_root(top: str) -> str | None:
    """The folder on the module search path that the top-level module ``top`` is found in."""
    try:
        found = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None
    if found is None:
        return None
    if found.submodule_search_locations:  # a package, regular or namespace
        return os.path.dirname(os.path.abspath(next(iter(found.submodule_search_locations))))
    return os.path.dirname(os.path.abspath(found.origin)) if found.has_location and found.origin else None


def parse_env(items: list[str]) -> dict[str, str]:
    """``KEY=VALUE`` items as a mapping; ``ConfigError`` for an item that is not one."""
    env: dict[str, str] = {}
    for item in items:
        key, equals, value = item.partition("=")
        if not equals or not _ENV_NAME.fullmatch(key):
            raise ConfigError(f"--env {item!r}: expected KEY=VALUE, KEY a variable name")
        env[key] = value
    return env


def read_env_file(path: Path) -> dict[str, str]:
    """A dotenv-style file: ``KEY=VALUE`` lines, ``#`` comments, an optional ``export ``, optional quotes."""
    try:
        lines = path.expanduser().read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--env-file {path}: {getattr(exc, 'strerror', None) or exc}") from None
    env: dict[str, str] = {}
    for number, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, equals, value = line.removeprefix("export ").partition("=")
        key, value = key.strip(), value.strip()
        if not equals or not _ENV_NAME.fullmatch(key):
            raise ConfigError(f"{path}:{number}: expected KEY=VALUE, got {raw.strip()!r}")
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        elif value[:1] in ("'", '"'):
            raise ConfigError(f"{path}:{number}: unterminated quote in {raw.strip()!r}")
        else:
            value = value.split(" #", 1)[0].rstrip()  # an unquoted value's trailing comment
        env[key] = value
    return env


def write_entry(path: Path, key: str, name: str, server: dict[str, Any]) -> bool:
    """Put ``server`` under ``config[key][name]`` in the JSON file at ``path``, keeping everything else.

    The file is replaced atomically (a temporary file next to it, then ``os.replace``); one that is not
    a JSON object, or whose ``key`` is not an object, is left as it is (``ConfigError``). True when an
    entry of that name was replaced.
    """
    target = Path(os.path.realpath(path))  # a symlinked file (dotfiles) is written through, not replaced
    try:
        text = target.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read it: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        config = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}): "
                          "fix it or pass another file with --config; it was left unchanged") from None
    if not isinstance(config, dict):
        raise ConfigError(f"{path} holds a JSON {type(config).__name__}, not an object: it was left unchanged")
    servers = config.setdefault(key, {})
    if not isinstance(servers, dict):
        raise ConfigError(f"{path}: {key!r} is not an object: it was left unchanged")
    replaced = name in servers
    servers[name] = server
    import tempfile  # here, not at the top: every command (``wiremcp stdio`` too) imports this module

    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        mode = stat.S_IMODE(target.stat().st_mode) if target.exists() else None
        fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(json.dumps(config, indent=2, ensure_ascii=False) + "\n")
                out.flush()
                os.fsync(out.fileno())
            if mode is not None:
                os.chmod(temporary, mode)  # keep the file's permissions (a new one is the owner's only)
            os.replace(temporary, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
    except OSError as exc:
        raise ConfigError(f"{path}: cannot write it: {exc.strerror or exc}") from None
    return replaced
