"""``docs/architecture.md``, run: each walk is the path a real request takes, the layout names what is there, the
verifier example guards an endpoint, and the development command is the one CI runs."""

from __future__ import annotations

import importlib
import re
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.support import walks
from tests.support.docs_pages import DOCS, ROOT, block, exec_as_file
from tests.support.http import ACCEPT_BOTH, CLIENT_INFO

pytestmark = pytest.mark.timeout(120)

PAGE = DOCS / "architecture.md"
CHECKED = {"walk-http-handshake", "walk-http-stateless", "walk-stdio", "walk-elicitation-asked",
           "walk-elicitation-answered", "verifier", "layout", "develop"}

WALKS = ["walk-http-handshake", "walk-http-stateless", "walk-stdio", "walk-elicitation-asked",
         "walk-elicitation-answered"]


def _hops(name: str) -> list[str]:
    return [line.split()[0] for line in block(PAGE, name).text.splitlines() if line.strip()]


async def _followed(name: str) -> list[str]:
    if name == "walk-http-handshake":
        return await walks.http_handshake_call()
    if name == "walk-http-stateless":
        return await walks.http_stateless_call()
    if name == "walk-stdio":
        return await walks.stdio_line()
    asked, answered = await walks.http_elicitation()
    return asked if name == "walk-elicitation-asked" else answered


@pytest.mark.parametrize("name", WALKS)
async def test_each_walk_is_the_path_a_real_request_takes(name: str) -> None:
    """Every hop names a function that exists; no module is entered twice on a walk (hops in a row may run in one
    module); and a real request of the kind runs every hop's function, in the walk's order (of first calls)."""
    hops = _hops(name)
    for hop in hops:
        module, _, qualname = hop.partition(":")
        target: object = importlib.import_module(module)
        for part in qualname.split("."):
            target = getattr(target, part)
        assert callable(target), hop
    entered = [module for i, module in enumerate(m.partition(":")[0] for m in hops)
               if i == 0 or hops[i - 1].partition(":")[0] != module]  # hops in a row in one module: one entry
    assert len(entered) == len(set(entered)), f"a module is entered twice: {entered}"
    followed = await _followed(name)
    missing = [hop for hop in hops if hop not in followed]
    assert not missing, f"not on the path of a real request: {missing}"
    positions = [followed.index(hop) for hop in hops]
    assert positions == sorted(positions), [hops[i] for i in range(len(hops)) if positions[i] != sorted(positions)[i]]


def test_the_layout_names_what_is_there() -> None:
    for line in block(PAGE, "layout").text.splitlines():
        if not line.startswith(" "):
            assert (ROOT / line.split()[0]).exists(), line


def test_the_modules_the_page_names_exist() -> None:
    """Every ``wiremcp.x`` and ``wiremcp.x:function`` of the prose is importable (a rename breaks this page)."""
    prose = "\n".join(line for line in PAGE.read_text().splitlines() if not line.startswith("wiremcp."))
    for dotted, function in sorted(set(re.findall(r"`(wiremcp(?:\.\w+)+)(?::(\w+))?`", prose))):
        parts = dotted.split(".")
        for cut in range(len(parts), 0, -1):  # the longest importable prefix, then attributes
            try:
                target: object = importlib.import_module(".".join(parts[:cut]))
            except ModuleNotFoundError:
                continue
            for attribute in parts[cut:]:
                target = getattr(target, attribute)
            break
        assert not function or hasattr(target, function), f"{dotted}:{function}"


async def test_the_verifier_example_takes_its_token_and_refuses_another(tmp_path: Path) -> None:
    app = exec_as_file(PAGE, "verifier", tmp_path / "server.py")["app"]
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                  "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": CLIENT_INFO}}
    transport = httpx.ASGITransport(app=app)

    async def sent(token: str) -> httpx.Response:
        async with httpx.AsyncClient(transport=transport, base_url="https://mcp.example.com") as http:
            return await http.post("/mcp", json=initialize, headers={"accept": ACCEPT_BOTH,
                                                                    "authorization": f"Bearer {token}"})

    accepted, refused = await sent("t-1"), await sent("t-2")
    await app.manager.close()
    assert accepted.status_code == 200, accepted.text
    assert refused.status_code == 401
    assert 'error="invalid_token"' in refused.headers["www-authenticate"]


def test_the_development_command_is_the_one_ci_runs() -> None:
    (command,) = block(PAGE, "develop").text.splitlines()
    ci = subprocess.run(["awk", r"/^```sh$/{inside=1; next} /^```$/{if (inside) exit} inside", str(ROOT / "README.md")],
                        capture_output=True, text=True, check=True).stdout.splitlines()
    assert command in ci, "the README's test command, which .ci/run extracts and runs"


