"""The wheel, installed in a fresh virtual environment, serving a user's project with packages of its own.

The repository's folders ``app/``, ``transports/`` and ``auth/`` are installed as one package,
``wiremcp``. This module builds the wheel once, installs it into a new venv outside the repository
and runs what a user runs there, each time as a real process of the NEW venv:

- ``python -m uvicorn wiremcp:asgi`` with ``WIREMCP_SERVER``, ``wiremcp stdio``, ``wiremcp http``,
  ``python server.py`` (``server.run()``) and ``python server.py http PORT``, each answering the
  official ``mcp`` client's ``tools/call``;
- the user's own top-level packages named ``app``, ``auth``, ``examples`` and ``transports`` (the
  repository's folder names) still import as theirs in their project;
- a mistake is one line on stderr and exit status 2.

The new venv has no pip and installs nothing from the network: a ``.pth`` file appends the current
interpreter's site-packages to its ``sys.path`` for the dependencies. A ``.pth`` file's path lines are
added to ``sys.path`` but the ``.pth`` files in those folders are not processed, so the editable
install of wiremcp there (a ``.pth`` of its own) is not seen; ``wiremcp`` itself comes from the wheel.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
import tomllib
import zipfile
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from packaging.requirements import Requirement

from tests.support.http import START_BOUND, UvicornProcess, _wait_until_accepting, free_port, stop_process
from tests.support.official_client import connect as http_connect
from tests.support.official_client import only_text

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
VERSION = str(PYPROJECT["project"]["version"])
PACKAGE_DIRS: dict[str, str] = PYPROJECT["tool"]["setuptools"]["package-dir"]
"""``{"wiremcp": "app", "wiremcp.transports": "transports", ...}``: what the wheel is built from."""
REPO_FOLDERS = ("app", "auth", "transports", "examples")
"""The repository's folder names, which a user's project may use for packages of its own."""
STATELESS = "2026-07-28"
WAIT = 10.0  # an upper bound for awaited things, never a sleep
RUN_BOUND = 60.0
"""Failure bound for one short command (a build, an install, a ``-c`` script)."""
OUTER_PTH = "_outer_site_packages.pth"

pytestmark = [
    pytest.mark.timeout(120),  # the first test also builds and installs the wheel
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

SERVER_PY = '''\
from wiremcp import MCPServer

server = MCPServer("user_server", "1.0.0")


@server.tool()
def shout(text: str) -> str:
    """Upper-case a text."""
    return text.upper()


if __name__ == "__main__":
    import sys

    server.run(*sys.argv[1:2], **({"port": int(sys.argv[2])} if len(sys.argv) > 2 else {}))
'''

USER_FILES = {
    "app/__init__.py": 'WHO = "the user\'s app"\n\n\ndef create_app() -> str:\n    return "the user\'s app"\n',
    "app/views.py": 'WHO = "the user\'s views"\n',
    "auth/__init__.py": 'WHO = "the user\'s auth"\n',
    "examples/__init__.py": 'WHO = "the user\'s examples"\n',
    "transports/__init__.py": 'WHO = "the user\'s transports"\n',
    "server.py": SERVER_PY,
}


# -- the wheel, installed -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Installed:
    wheel: Path
    venv: Path
    site_packages: Path
    """The new venv's own site-packages."""
    project: Path
    """The user's project: ``server.py`` and packages named like the repository's folders."""

    @property
    def python(self) -> str:
        return str(self.venv / "bin" / "python")

    @property
    def script(self) -> str:
        return str(self.venv / "bin" / "wiremcp")

    @property
    def server_py(self) -> str:
        return str(self.project / "server.py")


def user_env(**extra: str) -> dict[str, str]:
    """This environment without wiremcp's settings and anything that moves the module search path."""
    dropped = {"PYTHONPATH", "PYTHONHOME", "PYTHONSAFEPATH", "VIRTUAL_ENV"}
    env = {key: value for key, value in os.environ.items() if not key.startswith("WIREMCP_") and key not in dropped}
    return {**env, "PYTHONDONTWRITEBYTECODE": "1", **extra}


def run(command: list[str], cwd: Path | str, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=cwd, env=dict(env if env is not None else user_env()), stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=RUN_BOUND, check=False)


def check(command: list[str], cwd: Path | str, env: Mapping[str, str] | None = None) -> str:
    """The stdout of ``command``, which must succeed."""
    done = run(command, cwd, env)
    assert done.returncode == 0, (command, done.returncode, done.stdout, done.stderr)
    return done.stdout


def _backend_installed() -> bool:
    """Whether this environment has what ``[build-system] requires`` names (then the build needs no network)."""
    for text in PYPROJECT["build-system"]["requires"]:
        requirement = Requirement(text)
        try:
            installed = importlib.metadata.version(requirement.name)
        except importlib.metadata.PackageNotFoundError:
            return False
        if not requirement.specifier.contains(installed, prereleases=True):
            return False
    return True


def build_wheel(into: Path) -> Path:
    """``pip wheel`` of a copy of what the wheel is built from, as the Dockerfile copies it: the repository's
    own ``build/`` (the editable install's link tree) and egg-info are left alone, and no stale file in
    ``build/lib`` can reach the wheel."""
    source = into / "src"
    source.mkdir()
    for name in ("pyproject.toml", PYPROJECT["project"]["readme"]):
        shutil.copy2(ROOT / name, source / name)
    generated = shutil.ignore_patterns("__pycache__", "*.py[cod]", "*.egg-info")
    for folder in dict.fromkeys([*PACKAGE_DIRS.values(), "examples"]):  # examples: there, but never shipped
        # links as links (app/transports, app/auth), as Docker's COPY keeps them: what they name is copied too
        shutil.copytree(ROOT / folder, source / folder, ignore=generated, symlinks=True)
    # Offline with the build backend installed here; without it (no ``wheel``, an older setuptools), pip
    # provides it in an isolated build environment, from its configured index.
    isolation = ["--no-build-isolation"] if _backend_installed() else []
    dist = into / "dist"
    check([sys.executable, "-m", "pip", "wheel", "--no-deps", *isolation, "--disable-pip-version-check",
           "-w", str(dist), str(source)], cwd=into, env=user_env())
    (wheel,) = dist.glob("wiremcp-*.whl")
    return wheel


def write_project(project: Path) -> None:
    for name, text in USER_FILES.items():
        path = project / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    base = tmp_path_factory.mktemp("wheel")
    wheel = build_wheel(base)
    venv = base / "venv"
    check([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=base)
    python = str(venv / "bin" / "python")
    # Installed before the .pth below exists: pip, run by the new interpreter, then sees no wiremcp but its own.
    check([sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index",
           "--disable-pip-version-check", str(wheel)], cwd=base)
    site_packages = Path(check([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               cwd=base).strip())
    (site_packages / OUTER_PTH).write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    project = base / "project"
    write_project(project)
    return Installed(wheel, venv, site_packages, project)


# -- servers and clients ------------------------------------------------------------------------------------
@contextlib.contextmanager
def serving(command: Callable[[int], list[str]], cwd: Path, env: Mapping[str, str] | None = None, *,
            attempts: int = 3) -> Iterator[UvicornProcess]:
    """``command(port)`` running until its port accepts connections (as ``run_uvicorn``, any command, any
    working directory); on the way out, it must not have logged a traceback."""
    last_output = ""
    for _ in range(attempts):  # another process may grab the free port between probe and bind
        port = free_port()
        with tempfile.TemporaryFile() as log:
            proc = subprocess.Popen(command(port), cwd=cwd, env=dict(env if env is not None else user_env()),
                                    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
            running = UvicornProcess(proc, port, log)
            try:
                if _wait_until_accepting(proc, "127.0.0.1", port, time.monotonic() + START_BOUND):
                    yield running
                    output = running.output()
                    assert "Traceback" not in output, output
                    return
                last_output = running.output()
            finally:
                stop_process(proc)
    raise RuntimeError(f"{command(0)} did not start serving:\n{last_output}")


async def shout_over_http(server: UvicornProcess) -> str:
    async with http_connect(server) as client:  # the stateless era, checked on the wire
        tools = [tool.name for tool in (await client.list_tools()).tools]
        result = await client.call_tool("shout", {"text": "hello"})
    assert tools == ["shout"]
    assert not result.is_error
    return only_text(result.content)


@asynccontextmanager
async def stdio_connect(params: StdioServerParameters) -> AsyncIterator[Client]:
    """The official client on a server process's stdin/stdout; on exit, checks that nothing but JSON-RPC
    messages came out of its stdout."""
    problems: list[Exception] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, Exception):
            problems.append(message)

    async with Client(stdio_client(params), read_timeout_seconds=WAIT, message_handler=on_message) as client:
        assert client.protocol_version == STATELESS
        yield client
    assert problems == []


async def shout_over_stdio(command: str, args: list[str], cwd: Path | str) -> str:
    # The SDK passes the child a minimal environment (HOME, PATH, ...) with this one over it.
    params = StdioServerParameters(command=command, args=args, cwd=cwd, env=user_env())
    async with stdio_connect(params) as client:
        result = await client.call_tool("shout", {"text": "hello"})
    assert not result.is_error
    return only_text(result.content)


# -- what was built and installed --------------------------------------------------------------------------
def test_the_wheel_holds_one_package_wiremcp(installed: Installed) -> None:
    with zipfile.ZipFile(installed.wheel) as wheel:
        names = wheel.namelist()
        (top_level,) = [name for name in names if name.endswith(".dist-info/top_level.txt")]
        top_level_text = wheel.read(top_level).decode()
    assert top_level_text.split() == ["wiremcp"]
    assert len(names) == len(set(names))  # each file once: the links in app/ add none of the edges' files to it
    assert [name for name in names if name.startswith(tuple(f"{folder}/" for folder in REPO_FOLDERS))] == []
    assert {name.split("/")[0] for name in names} == {"wiremcp", f"wiremcp-{VERSION}.dist-info"}
    # every source file of the folders the package is built from, subfolders included (a subpackage
    # missing from [tool.setuptools] packages would be left out silently), at its place in wiremcp
    source = installed.wheel.parent.parent / "src"
    expected = {"/".join([*package.split("."), *path.relative_to(source / folder).parts])
                for package, folder in PACKAGE_DIRS.items() for path in (source / folder).rglob("*")
                if path.suffix == ".py" or path.name == "py.typed"}
    assert "wiremcp/transports/serving/cli/__init__.py" in expected
    assert sorted(expected - set(names)) == []


def test_the_venv_has_wiremcp_and_no_repository_folders(installed: Installed) -> None:
    entries = {path.name for path in installed.site_packages.iterdir()}
    assert {folder for folder in REPO_FOLDERS if folder in entries} == set()
    assert {name for name in entries if not name.endswith((".dist-info", ".pth"))} == {"wiremcp"}
    # wiremcp is the wheel's, not the editable install of the site-packages appended for the dependencies
    where = check([installed.python, "-c", "import wiremcp, uvicorn; print(wiremcp.__file__)"], cwd=installed.project)
    assert Path(where.strip()).is_relative_to(installed.site_packages / "wiremcp")
    version = run([installed.script, "--version"], cwd="/")
    assert (version.returncode, version.stdout, version.stderr) == (0, f"wiremcp {VERSION}\n", "")


def test_the_users_own_packages_win_in_their_project(installed: Installed) -> None:
    code = ("import wiremcp, app, auth, examples, transports, app.views; from app import create_app; "
            "print(create_app(), app.views.WHO, auth.WHO, examples.WHO, transports.WHO, sep='\\n'); "
            "print(*(m.__file__ for m in (app, app.views, auth, examples, transports)), sep='\\n')")
    lines = check([installed.python, "-c", code], cwd=installed.project).splitlines()
    assert lines[:5] == ["the user's app", "the user's views", "the user's auth", "the user's examples",
                         "the user's transports"]
    assert all(Path(file).is_relative_to(installed.project) for file in lines[5:]), lines
    # so `uvicorn app:asgi` in their project loads THEIR app: the framework's door is not there
    assert check([installed.python, "-c", "import app; print(hasattr(app, 'asgi'))"],
                 cwd=installed.project) == "False\n"


# -- serving --------------------------------------------------------------------------------------------------
async def test_uvicorn_serves_wiremcp_asgi(installed: Installed) -> None:
    def command(port: int) -> list[str]:
        return [installed.python, "-m", "uvicorn", "wiremcp:asgi", "--port", str(port),
                "--log-level", "warning", "--timeout-graceful-shutdown", "2"]

    with serving(command, installed.project, user_env(WIREMCP_SERVER="server:server")) as server:
        assert await shout_over_http(server) == "HELLO"


async def test_wiremcp_stdio_serves_a_file_from_any_directory(installed: Installed) -> None:
    assert await shout_over_stdio(installed.script, ["stdio", installed.server_py], cwd="/") == "HELLO"


async def test_wiremcp_http_serves_a_file_in_the_project(installed: Installed) -> None:
    def command(port: int) -> list[str]:
        return [installed.script, "http", "server.py", "--port", str(port)]

    with serving(command, installed.project) as server:
        assert await shout_over_http(server) == "HELLO"


async def test_python_server_py_serves_stdio(installed: Installed) -> None:
    assert await shout_over_stdio(installed.python, ["server.py"], cwd=installed.project) == "HELLO"


async def test_python_server_py_http_serves_http(installed: Installed) -> None:
    def command(port: int) -> list[str]:
        return [installed.python, "server.py", "http", str(port)]

    with serving(command, installed.project) as server:
        assert await shout_over_http(server) == "HELLO"


async def test_uvicorn_app_asgi_in_the_images_working_directory(installed: Installed,
                                                                 tmp_path: Path) -> None:
    """The Dockerfile's final stage: the wheel in a venv, and a working directory holding the door
    ``app/__init__.py`` and ``examples/``; its command ``uvicorn app:asgi`` serves the installed wiremcp."""
    image = tmp_path / "srv" / "wiremcp"
    (image / "app").mkdir(parents=True)
    shutil.copy(ROOT / "app" / "__init__.py", image / "app" / "__init__.py")
    shutil.copytree(ROOT / "examples", image / "examples", ignore=shutil.ignore_patterns("__pycache__"))

    def command(port: int) -> list[str]:
        return [installed.python, "-m", "uvicorn", "app:asgi", "--port", str(port), "--log-level", "warning",
                "--timeout-graceful-shutdown", "2"]

    with serving(command, image, user_env(WIREMCP_SERVER="examples.word_count:server")) as server:
        async with http_connect(server) as client:
            result = await client.call_tool("word_count", {"text": "read the wire"})
    assert result.structured_content == {"words": 3, "chars": 13}
    modules = check([installed.python, "-c", "import app, wiremcp, sys; app.MCPServer; "
                     "print(app.MCPServer is wiremcp.MCPServer, wiremcp.__file__.startswith(sys.prefix))"], cwd=image)
    assert modules.split() == ["True", "True"]


# -- mistakes -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mistake", ["wiremcp-stdio-nothere.py", "uvicorn-wiremcp-asgi-nothere:server"])
def test_a_mistake_is_one_line_and_exit_status_2(mistake: str, installed: Installed) -> None:
    if mistake.startswith("wiremcp"):
        done = run([installed.script, "stdio", "nothere.py"], cwd=installed.project)
        lines = done.stderr.splitlines()
    else:
        done = run([installed.python, "-m", "uvicorn", "wiremcp:asgi", "--port", str(free_port())],
                   cwd=installed.project, env=user_env(WIREMCP_SERVER="nothere:server"))
        lines = [line for line in done.stderr.splitlines() if line.startswith("wiremcp:")]  # among uvicorn's
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr + done.stdout
    assert done.stdout == ""
    (line,) = lines
    assert line.startswith("wiremcp: error: ")
    assert "nothere" in line
