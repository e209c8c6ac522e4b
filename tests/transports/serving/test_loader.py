"""Server specs: ``MODULE[:ATTR]`` or ``path/to/server.py[:ATTR]``, the same from any working directory; a
spec that names no server is one ``ConfigError`` line."""

from __future__ import annotations

import os
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from wiremcp import MCPServer
from wiremcp.transports.serving.loader import (
    FILE_MODULE,
    ServerModuleError,
    load_server,
    resolve_file,
    spec_file,
)
from wiremcp.transports.serving.settings import ConfigError


@pytest.fixture(autouse=True)
def _imports_undone() -> Iterator[None]:
    """What a test imports (modules, search path entries) is forgotten after it."""
    modules, path, cwd = set(sys.modules), list(sys.path), os.getcwd()
    yield
    for name in set(sys.modules) - modules:
        del sys.modules[name]
    sys.modules.pop(FILE_MODULE, None)
    sys.path[:] = path
    os.chdir(cwd)


def write(folder: Path, name: str, body: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("from wiremcp import MCPServer\n" + textwrap.dedent(body))
    return path


def unique() -> str:
    return f"spec_{uuid.uuid4().hex[:8]}"


def test_a_file_is_found_from_any_working_directory(tmp_path: Path) -> None:
    name = unique()
    path = write(tmp_path / "project", f"{name}.py", 'mine = MCPServer("mine")\n')
    os.chdir("/")
    server = load_server(str(path))
    assert server.name == "mine"
    assert sys.modules[name].mine is server  # loaded under its own name: its neighbours can import it
    assert load_server(str(path)) is server  # once


def test_a_relative_file_with_an_attribute(tmp_path: Path) -> None:
    write(tmp_path, "two.py", 'a = MCPServer("a")\nb = MCPServer("b")\n')
    os.chdir(tmp_path)
    assert load_server("two.py:b").name == "b"
    assert resolve_file("two.py:b") == f"{tmp_path / 'two.py'}:b"
    assert spec_file("two.py") == tmp_path / "two.py"


def test_a_file_whose_name_is_taken_is_loaded_under_its_own_module_name(tmp_path: Path) -> None:
    write(tmp_path, "json.py", 'server = MCPServer("not-the-stdlib")\n')  # the stdlib's json is loaded already
    assert load_server(str(tmp_path / "json.py")).name == "not-the-stdlib"
    assert sys.modules[FILE_MODULE].server.name == "not-the-stdlib"
    assert "dumps" in vars(sys.modules["json"])


def test_a_file_imports_its_neighbours(tmp_path: Path) -> None:
    helper = unique()
    (tmp_path / f"{helper}.py").write_text("GREETING = 'hi'\n")
    path = write(tmp_path, "main_server.py", f'from {helper} import GREETING\nserver = MCPServer(GREETING)\n')
    assert load_server(str(path)).name == "hi"


def test_a_module_in_the_working_directory_or_the_app_dir(tmp_path: Path) -> None:
    name = unique()
    write(tmp_path, f"{name}.py", 'server = MCPServer("here")\n')
    os.chdir(tmp_path)
    assert load_server(name).name == "here"
    other = unique()
    write(tmp_path / "elsewhere", f"{other}.py", 'server = MCPServer("there")\n')
    assert load_server(f"{other}:server", app_dir=str(tmp_path / "elsewhere")).name == "there"


def test_the_default_is_the_one_server_else_the_attribute_server(tmp_path: Path) -> None:
    name = unique()
    write(tmp_path, f"{name}.py", 'only = MCPServer("only")\nalias = only\n')
    os.chdir(tmp_path)
    assert load_server(name).name == "only"
    both = unique()
    write(tmp_path, f"{both}.py", 'server = MCPServer("main")\nother = MCPServer("other")\n')
    assert load_server(both).name == "main"


def test_a_factory_is_called(tmp_path: Path) -> None:
    name = unique()
    write(tmp_path, f"{name}.py", 'def make() -> MCPServer:\n    return MCPServer("made")\n')
    os.chdir(tmp_path)
    server = load_server(f"{name}:make")
    assert isinstance(server, MCPServer)
    assert server.name == "made"


@pytest.mark.parametrize(("body", "spec_tail", "message"), [
    ('a = MCPServer("a")\nb = MCPServer("b")\n', "", "{name} defines 2 MCPServers (a, b): name one as {name}:ATTR"),
    ("x = 1\n", "", "{name} defines no MCPServer: name one as {name}:ATTR"),
    ("x = 1\n", ":nothing", "{name} has no attribute 'nothing'"),
    ("x = 1\n", ":x", "{name}:x is a int, not an MCPServer"),
])
def test_a_spec_that_names_no_server(tmp_path: Path, body: str, spec_tail: str, message: str) -> None:
    name = unique()
    write(tmp_path, f"{name}.py", body)
    os.chdir(tmp_path)
    with pytest.raises(ConfigError) as caught:
        load_server(name + spec_tail)
    assert str(caught.value) == message.format(name=name)


@pytest.mark.parametrize("spec", ["no_such_module_here:server", "no_such_package.sub:server", "missing.py",
                                  "missing/server.py:server", "not a spec", "a:b:c"])
def test_a_spec_that_does_not_resolve_is_one_line(tmp_path: Path, spec: str) -> None:
    os.chdir(tmp_path)
    with pytest.raises(ConfigError) as caught:
        load_server(spec)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(("body", "line", "reason"), [
    ("class Opaque:\n    pass\n\nserver = MCPServer('s')\n\n@server.tool()\ndef broken(x: Opaque) -> str:\n"
     "    return ''\n", 6, "tool broken: parameter 'x' is typed "),
    ("server = MCPServer('s')\n\n@server.tool()\ndef broken(*args: str) -> str:\n    return ''\n", 3,
     "tool broken: *args and **kwargs cannot be described by a schema"),
    ("server = MCPServer('s')\n\n@server.prompt()\ndef broken(*names: str) -> str:\n    return ''\n", 3,
     "prompt broken: *args and **kwargs are not supported"),
])
def test_a_component_written_wrong_is_one_line_that_says_where(tmp_path: Path, body: str, line: int,
                                                               reason: str) -> None:
    """A tool, resource or prompt the framework cannot register: the user's mistake, told as the file and
    line where its definition starts (the decorator), its name and why, in one line (``wiremcp stdio|http``
    exit with status 2)."""
    path = write(tmp_path, "server.py", body)
    with pytest.raises(ConfigError) as caught:
        load_server(str(path))
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{path}:{line + 1}: {reason}")  # + 1: the import line write() adds


def test_a_module_that_imports_something_missing_shows_the_users_own_error(tmp_path: Path) -> None:
    """Not the spec's fault: the traceback points at the import in the user's module."""
    name = unique()
    write(tmp_path, f"{name}.py", "import a_dependency_not_installed\nserver = MCPServer('x')\n")
    os.chdir(tmp_path)
    with pytest.raises(ServerModuleError) as caught:
        load_server(name)
    assert isinstance(caught.value.error, ModuleNotFoundError)
    assert caught.value.error.name == "a_dependency_not_installed"
    assert caught.value.report == (
        f'Traceback (most recent call last):\n  File "{tmp_path / name}.py", line 2, in <module>\n'
        "    import a_dependency_not_installed\nModuleNotFoundError: No module named 'a_dependency_not_installed'\n")


def test_a_module_spec_that_ends_in_py_is_a_module_when_no_such_file_exists(tmp_path: Path) -> None:
    package = unique()
    write(tmp_path / package, "py.py", 'server = MCPServer("module named py")\n')
    (tmp_path / package / "__init__.py").write_text("")
    os.chdir(tmp_path)
    assert load_server(f"{package}.py").name == "module named py"
