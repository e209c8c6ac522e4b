"""A mistake in the user's own server file, as a user meets it, on real processes: through ``wiremcp stdio
SPEC``, ``uvicorn wiremcp:asgi`` (``WIREMCP_SERVER=SPEC``) and ``python server.py`` (a file calling
``server.run()``). An error raised as the module is imported shows the user's frames and the error only
(none of importlib's nor of wiremcp's loader); a tool parameter whose type has no JSON Schema is one line
naming the function, the parameter, its type and what to use instead. Exit status 2 either way.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.http import free_port

BOUND = 20.0

RAISES_AT_IMPORT = '''from wiremcp import MCPServer

config: dict[str, str] = {}
server = MCPServer("demo")
token = config["TOKEN"]
'''

UNSUPPORTED_PARAMETER = '''import socket

from wiremcp import MCPServer

server = MCPServer("demo")


@server.tool()
async def send(conn: socket.socket, text: str) -> str:
    return text


if __name__ == "__main__":
    server.run()
'''

ARBITRARY_CLASS = '''from wiremcp import MCPServer

server = MCPServer("demo")


class Connection:
    pass


@server.tool()
def send(text: str, conns: list[Connection] | None = None) -> str:
    return text


if __name__ == "__main__":
    server.run()
'''

HOW = ("which has no JSON Schema: type it str, int, float, bool, a list or dict of them, an Enum, a Literal, a "
       "pydantic model, a dataclass or a TypedDict (and make what it stands for inside the function)")


def _env(**extra: str) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("WIREMCP_") and k != "PYTHONPATH"}
    return {**clean, "PYTHONDONTWRITEBYTECODE": "1", **extra}


def _ways(file: Path) -> dict[str, list[str]]:
    """How a user runs ``file``: the command line, uvicorn with the package's app, the file itself."""
    return {"wiremcp stdio": [sys.executable, "-m", "wiremcp", "stdio", file.name],
            "uvicorn wiremcp:asgi": [sys.executable, "-m", "uvicorn", "wiremcp:asgi", "--port", str(free_port())],
            "python server.py": [sys.executable, file.name]}


def _run(file: Path, way: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(_ways(file)[way], cwd=file.parent, env=_env(WIREMCP_SERVER=file.name),
                          capture_output=True, text=True, timeout=BOUND, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("way", ["wiremcp stdio", "uvicorn wiremcp:asgi"])
def test_an_error_at_import_shows_the_users_frames_and_the_error_only(tmp_path: Path, way: str) -> None:
    file = tmp_path / "server.py"
    file.write_text(RAISES_AT_IMPORT)
    done = _run(file, way)
    assert done.returncode == 2, done
    assert done.stderr == (
        "Traceback (most recent call last):\n"
        f'  File "{file}", line 5, in <module>\n'
        '    token = config["TOKEN"]\n'
        "            ~~~~~~^^^^^^^^^\n"
        "KeyError: 'TOKEN'\n"), done.stderr


def test_an_error_in_a_module_the_server_imports_shows_both_files_and_no_import_machinery(tmp_path: Path) -> None:
    (tmp_path / "settings_of_mine.py").write_text("import os\n\nTOKEN = os.environ['MY_TOKEN']\n")
    file = tmp_path / "server.py"
    file.write_text("import settings_of_mine\nfrom wiremcp import MCPServer\n\nserver = MCPServer('demo')\n")
    done = _run(file, "wiremcp stdio")
    assert done.returncode == 2, done
    files = [line.split('"')[1] for line in done.stderr.splitlines() if line.startswith('  File "')]
    assert files[:2] == [str(file), str(tmp_path / "settings_of_mine.py")], done.stderr
    assert all("importlib" not in name and "wiremcp" not in name for name in files), done.stderr
    assert done.stderr.endswith("KeyError: 'MY_TOKEN'\n"), done.stderr


@pytest.mark.parametrize("way", ["wiremcp stdio", "uvicorn wiremcp:asgi", "python server.py"])
@pytest.mark.parametrize(("source", "line", "parameter", "typed"), [
    (UNSUPPORTED_PARAMETER, 8, "conn", "socket.socket"),
    (ARBITRARY_CLASS, 10, "conns", "list[{module}.Connection] | None"),
])
def test_a_parameter_type_without_a_schema_is_one_line_naming_it(tmp_path: Path, way: str, source: str, line: int,
                                                                  parameter: str, typed: str) -> None:
    file = tmp_path / "server.py"
    file.write_text(source)
    done = _run(file, way)
    assert done.returncode == 2, done
    module = "__main__" if way == "python server.py" else "server"
    assert done.stderr == (f"wiremcp: error: {file}:{line}: tool send: parameter {parameter!r} is typed "
                           f"{typed.format(module=module)}, {HOW}\n"), done.stderr
