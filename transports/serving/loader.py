"""Find the server a spec names: ``MODULE[:ATTR]`` or a file, ``path/to/server.py[:ATTR]``.

Without ``ATTR`` the server is the module's one ``MCPServer``, or else its attribute ``server``. An
attribute that is a function (a factory) is called. A module is looked up as uvicorn does, in the
working directory first, then in ``app_dir`` if given, then in the installed packages; a file is
loaded from its path, its folder first on ``sys.path`` (as ``python server.py`` would), so the same
spec resolves the same from any working directory. ``app.X`` names ``wiremcp.X`` where ``app`` is
this package seen by its folder's name (the repository root).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import sys
import traceback
from pathlib import Path
from types import ModuleType
from typing import NoReturn

from wiremcp.errors import DefinitionError
from wiremcp.server import MCPServer
from wiremcp.transports.serving.settings import ConfigError

_FILE_SPEC = re.compile(r"(?P<path>.+\.py)(?::(?P<attr>[A-Za-z_]\w*))?")
_MODULE_SPEC = re.compile(r"(?P<module>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)(?::(?P<attr>[A-Za-z_]\w*))?")
FILE_MODULE = "__wiremcp_server__"
"""The name a server file is loaded under when its own name is taken or is not a module name."""


def load_server(spec: str, app_dir: str | None = None) -> MCPServer:
    """The ``MCPServer`` that ``spec`` names; ``ConfigError`` (one line) when it names none."""
    try:
        server = _load(spec.strip(), app_dir)
    except DefinitionError as exc:  # a tool, resource or prompt written wrong: the user's to fix, one line
        raise ConfigError(str(exc)) from None
    except ConfigError:
        raise
    except Exception as exc:  # raised by the user's module as it was imported (or by its factory)
        raise ServerModuleError(exc) from None
    return checked(server)


class ServerModuleError(ConfigError):
    """The server's module raised as it was imported (or its factory as it was called): the traceback of the
    user's own frames and the error, without the frames of the import machinery and of this loader that
    led to them; exit status 2 as for any mistake of the user's."""

    def __init__(self, error: Exception) -> None:
        self.error = error
        self.report = "".join(_user_traceback(error).format())
        super().__init__(self.report.rstrip().splitlines()[-1])

    def exit(self) -> NoReturn:
        sys.stderr.write(self.report)
        raise SystemExit(2) from None


_IMPORT_MACHINERY = (str(Path(importlib.__file__).parent) + os.sep, "<frozen importlib")
_FRAMEWORK = (*_IMPORT_MACHINERY, str(Path(__file__).parents[2]) + os.sep)
"""Where the frames between the command and the user's module come from: importlib, and wiremcp itself (as
imported: the frames name the files by the path they were imported from)."""


def _user_traceback(error: BaseException) -> traceback.TracebackException:
    """``error``'s traceback, with its chained errors', less the import machinery's frames anywhere and
    wiremcp's before the first of the user's (all kept when none is the user's: then it is wiremcp's own)."""
    report = traceback.TracebackException.from_exception(error)
    seen: set[int] = set()
    todo = [report]
    while todo:
        one = todo.pop()
        if id(one) in seen:
            continue
        seen.add(id(one))
        frames = [frame for frame in one.stack if not frame.filename.startswith(_IMPORT_MACHINERY)]
        first = next((n for n, frame in enumerate(frames) if not frame.filename.startswith(_FRAMEWORK)), None)
        if first is not None:
            one.stack = traceback.StackSummary.from_list(frames[first:])
        todo += [chained for chained in (one.__cause__, one.__context__) if chained is not None]
    return report


def checked(server: MCPServer) -> MCPServer:
    """``server``, once what can only be checked with everything registered holds (``MCPServer.check``: every
    tool's view is served); ``ConfigError`` (one line) otherwise. Every way of serving goes through it."""
    try:
        server.check()
    except DefinitionError as exc:
        raise ConfigError(str(exc)) from None
    return server


def _load(spec: str, app_dir: str | None) -> MCPServer:
    file_spec = _file_spec(spec)
    if file_spec:
        module, label = _load_file(Path(file_spec["path"])), file_spec["path"]
        attr = file_spec["attr"]
    else:
        module_spec = _MODULE_SPEC.fullmatch(spec)
        if module_spec is None:
            raise ConfigError(f"{spec!r} is not a server spec: expected MODULE[:ATTR] or path/to/server.py[:ATTR]")
        try:
            module, label = _load_module(module_spec["module"], app_dir), module_spec["module"]
        except ConfigError:
            if _FILE_SPEC.fullmatch(spec):  # meant as a file, most likely: say so
                raise ConfigError(f"{Path(spec.partition(':')[0]).absolute()}: no such file") from None
            raise
        attr = module_spec["attr"]
    return _server_in(module, label, attr)


def spec_file(spec: str) -> Path | None:
    """The absolute path of the file ``spec`` names, or None for a module spec."""
    file_spec = _file_spec(spec.strip())
    return Path(file_spec["path"]).expanduser().absolute() if file_spec else None


def resolve_file(spec: str) -> str:
    """``spec`` with a relative file path made absolute (a module spec as it is), to be read elsewhere."""
    file_spec = _file_spec(spec.strip())
    if not file_spec:
        return spec.strip()
    path = str(Path(file_spec["path"]).expanduser().absolute())
    return f"{path}:{file_spec['attr']}" if file_spec["attr"] else path


def _file_spec(spec: str) -> re.Match[str] | None:
    file_spec = _FILE_SPEC.fullmatch(spec)
    if file_spec and (_MODULE_SPEC.fullmatch(spec) is None or Path(file_spec["path"]).expanduser().is_file()):
        return file_spec
    return None


def _load_module(name: str, app_dir: str | None) -> ModuleType:
    for directory in (app_dir, os.getcwd()):  # the working directory ends up first, as with uvicorn
        if directory and directory not in sys.path:
            sys.path.insert(0, directory)
    name = _through_the_door(name)
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if not name.startswith(missing) or (missing != name and name[len(missing)] != "."):
            raise  # the module exists but imports something missing: the user's traceback to read
        where = ", ".join(dict.fromkeys(d for d in (os.getcwd(), app_dir) if d))
        raise ConfigError(f"no module named {missing!r} (looked in {where} and the installed packages)") from None


def _through_the_door(name: str) -> str:
    """``app.X`` as ``wiremcp.X`` when ``app`` is this package under its folder's name, never a second copy."""
    head, dot, rest = name.partition(".")
    if head != "app" or not dot:
        return name
    try:
        app = importlib.import_module("app")
    except ImportError:
        return name
    return f"wiremcp.{rest}" if getattr(app, "MCPServer", None) is MCPServer else name


def _load_file(path: Path) -> ModuleType:
    path = path.expanduser().absolute()
    if not path.is_file():
        raise ConfigError(f"{path}: no such file")
    directory = str(path.parent)
    if directory not in sys.path:
        sys.path.insert(0, directory)  # its neighbours import as they would under ``python server.py``
    name = path.stem
    loaded = sys.modules.get(name)
    if loaded is not None and _is_file(loaded, path):
        return loaded
    if name.isidentifier() and loaded is None:
        found = importlib.util.find_spec(name)
        if found is not None and found.origin and _same(found.origin, path):
            return importlib.import_module(name)
    found = importlib.util.spec_from_file_location(FILE_MODULE, path)
    if found is None or found.loader is None:
        raise ConfigError(f"{path}: not a Python module")
    module = importlib.util.module_from_spec(found)
    sys.modules[FILE_MODULE] = module  # registered first: pydantic and dataclasses look their module up
    try:
        found.loader.exec_module(module)
    except BaseException:
        del sys.modules[FILE_MODULE]
        raise
    return module


def _is_file(module: ModuleType, path: Path) -> bool:
    origin = getattr(module, "__file__", None)
    return bool(origin) and _same(str(origin), path)


def _same(origin: str, path: Path) -> bool:
    try:
        return os.path.samefile(origin, path)
    except OSError:
        return False


def _server_in(module: ModuleType, label: str, attr: str | None) -> MCPServer:
    if attr is None:
        servers = {name: value for name, value in vars(module).items() if isinstance(value, MCPServer)}
        if len(set(map(id, servers.values()))) == 1:
            return next(iter(servers.values()))
        if "server" not in vars(module):
            found = f"{len(servers)} MCPServers ({', '.join(sorted(servers))})" if servers else "no MCPServer"
            raise ConfigError(f"{label} defines {found}: name one as {label}:ATTR")
        attr = "server"
    obj = getattr(module, attr, None)
    if obj is None:
        raise ConfigError(f"{label} has no attribute {attr!r}")
    if callable(obj) and not isinstance(obj, MCPServer):
        obj = obj()  # a factory
    if not isinstance(obj, MCPServer):
        raise ConfigError(f"{label}:{attr} is a {type(obj).__name__}, not an MCPServer")
    return obj
