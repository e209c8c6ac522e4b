"""What the tests of the documentation pages share: the pages' blocks by marker, a block run as the file a reader
would save, a block's shell command run as typed, and a server started from a page's command on a free port.

A page ``docs/<name>.md`` is tested by ``tests/docs/test_<name>.py`` (``-`` as ``_``; ``docs/reference/x.md`` by
``tests/docs/reference/test_x.py``), whose ``CHECKED`` (a set literal) names the blocks its tests run;
``tests/docs/test_pages.py`` reads it from the module's source (test modules do not import each other) and fails
a Python block of ours that no check runs.
"""

from __future__ import annotations

import ast
import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support import markdown
from tests.support.http import (
    ACCEPT_BOTH,
    CLIENT_INFO,
    START_BOUND,
    _wait_until_accepting,
    free_port,
    stop_process,
)
from tests.support.markdown import Block
from tests.support.parts import missing

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
TESTS = ROOT / "tests" / "docs"
BIN = Path(sys.executable).parent
ENV = {**{k: v for k, v in os.environ.items() if not k.startswith("WIREMCP_")},
       "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "PYTHONDONTWRITEBYTECODE": "1",
       "WIREMCP_LOG_LEVEL": "WARNING"}
"""The environment a reader's command runs in: this venv's ``bin`` first on PATH, no ``WIREMCP_*`` of ours."""
STATELESS_META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}


def blocks(page: Path) -> list[Block]:
    return markdown.blocks(page, "docs")


def block(page: Path, name: str) -> Block:
    return markdown.block(page, "docs", name)


def module_of(page: Path) -> Path:
    """The test module of ``page``: ``docs/a-b.md`` -> ``tests/docs/test_a_b.py``."""
    relative = page.relative_to(DOCS)
    return TESTS / relative.parent / f"test_{relative.stem.replace('-', '_')}.py"


def checked(page: Path) -> set[str]:
    """The blocks of ``page`` its test module runs: its ``CHECKED``, read from the source (empty without one)."""
    module = module_of(page)
    if not module.is_file():
        return set()
    for node in ast.parse(module.read_text()).body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["CHECKED"]:
            found = ast.literal_eval(node.value)
            assert isinstance(found, set), f"{module.name}: CHECKED is a set literal"
            return {str(name) for name in found}
    return set()


def exec_as_file(page: Path, name: str, path: Path, **preset: Any) -> dict[str, Any]:
    """The block run as the file ``path``, as the reader would save it (not as ``__main__``: nothing serves);
    ``preset`` names are defined before it runs (what the page says comes from elsewhere)."""
    text = block(page, name).text
    path.write_text(text)
    namespace: dict[str, Any] = {"__name__": f"docs_{name.replace('-', '_')}", "__file__": str(path), **preset}
    exec(compile(text, str(path), "exec"), namespace)
    return namespace


def notifications(client: Any, method: str) -> list[dict[str, Any]]:
    """The params of every ``method`` notification the in-memory client received."""
    return [n["params"] for n in client.notifications if n["method"] == method]


def sh(command: str, cwd: Path = ROOT, **options: Any) -> subprocess.CompletedProcess[str]:
    """``command`` run by bash as typed (from the repository root unless ``cwd``), bounded."""
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=ENV, capture_output=True, text=True, timeout=60,
                          **options)


@contextlib.contextmanager
def background(command: str, cwd: Path = ROOT, **env: str) -> Iterator[subprocess.Popen[str]]:
    """``command`` in a shell of its own, stopped (its whole process group) on the way out; it printed no
    traceback."""
    with tempfile.TemporaryFile("w+") as log:
        process = subprocess.Popen(["bash", "-c", command], cwd=cwd, env={**ENV, **env}, stdout=log,
                                   stderr=subprocess.STDOUT, text=True, start_new_session=True)
        try:
            yield process
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            stop_process(process)  # type: ignore[arg-type]
            log.seek(0)
            output = log.read()
    assert "Traceback" not in output, output


def accepting(process: subprocess.Popen[str], port: int) -> None:
    """Once ``process`` accepts connections on ``port`` (bounded); fails if it exits first."""
    assert _wait_until_accepting(process, "127.0.0.1", port, time.monotonic() + START_BOUND), "it exited"  # type: ignore[arg-type]


def initialize(url: str, **headers: str) -> httpx.Response:
    """A handshake-era ``initialize`` POSTed to ``url``."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": CLIENT_INFO}}
    return httpx.post(url, json=body, headers={"accept": ACCEPT_BOTH, **headers}, timeout=10)


def curl(for_what: str) -> None:
    """Skip (or fail, under ``--require-parts``) a test of a page's curl commands where there is no curl."""
    if shutil.which("curl") is None:
        missing(f"no curl on PATH for {for_what} (Debian: apt-get install curl)")


def script_against(serve: str, script: str) -> subprocess.CompletedProcess[str]:
    """``script`` (a page's commands against port 8000) run against the server ``serve`` starts (``{port}`` in
    it: a free one, which replaces 8000 in the script), once the server accepts connections."""
    port = free_port()
    with background(serve.format(port=port)) as process:
        accepting(process, port)
        return sh(script.replace("8000", str(port)))


def wiremcp_command(page: Path, name: str) -> list[str]:
    """The block's one command, ``wiremcp`` being this interpreter's (``python -m wiremcp``)."""
    (line,) = block(page, name).text.splitlines()
    program, *arguments = line.split()
    assert program == "wiremcp"
    return [sys.executable, "-m", "wiremcp", *arguments]


def stops_as_shown(page: Path, server: str, error: str, folder: Path, shown_folder: str) -> None:
    """The page's ``server`` block, saved as ``server.py`` in ``folder`` and started with ``wiremcp stdio
    server.py`` (the first line of its ``error`` block), stops at once: exit 2, nothing on stdout, and on stderr
    the one line the ``error`` block shows (the folder written there as ``shown_folder``)."""
    (folder / "server.py").write_text(block(page, server).text)
    command, said = block(page, error).text.splitlines()
    assert command == "$ wiremcp stdio server.py"
    done = subprocess.run([sys.executable, "-m", "wiremcp", "stdio", "server.py"], cwd=folder, env=ENV,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=START_BOUND)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.replace(str(folder), shown_folder).splitlines() == [said]


class _PortTaken(Exception):
    """The server could not bind its port: another process took it first."""


def _until_answered(url: str, process: subprocess.Popen[bytes], tool: str, arguments: dict[str, Any]) -> Any:
    """The stateless-era answer of the server at ``url`` to a call of ``tool``, once it answers (bounded)."""
    deadline = time.monotonic() + START_BOUND
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments, "_meta": STATELESS_META}}
    headers = {"accept": ACCEPT_BOTH, "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call",
               "mcp-name": tool}
    while True:
        if process.poll() is not None:
            said = process.stderr.read().decode() if process.stderr else ""
            if "address already in use" in said:
                raise _PortTaken(said)
            raise AssertionError(said or "it exited")
        try:
            return httpx.post(url, json=body, headers=headers, timeout=5).json()
        except httpx.TransportError:
            assert time.monotonic() < deadline, f"{url} answers within {START_BOUND}s"
            time.sleep(0.05)  # the poll interval of a bounded wait


def answered_on_a_free_port(started_on: Callable[[int], list[str]], cwd: Path, tool: str,
                            arguments: dict[str, Any]) -> Any:
    """The answer to ``tool`` from the server ``started_on(port)`` gives the command of, on a free port; a port
    another test (another worker) took before the server bound it is given up for another, three times at most."""
    for _ in range(3):
        port = free_port()
        process = subprocess.Popen(started_on(port), cwd=cwd, env=ENV, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            return _until_answered(f"http://127.0.0.1:{port}/mcp", process, tool, arguments)
        except _PortTaken:
            continue
        finally:
            stop_process(process)
    pytest.fail("three free ports in a row were taken before the server bound them")


def headings(text: str) -> list[tuple[int, str]]:
    """The Markdown headings outside code blocks: (level, text)."""
    out, inside = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            inside = not inside
        elif not inside and (heading := re.match(r"(#+) (.+)", line)):
            out.append((len(heading.group(1)), heading.group(2)))
    return out


def slug(heading: str) -> str:
    """The anchor MkDocs gives a heading (its default ``toc`` slugify)."""
    return re.sub(r"[\s]+", "-", re.sub(r"[^\w\s-]", "", heading.lower()).strip())
