"""The README, the project's front page, run: every code block a reader may copy is executed here, the way the
reader would, and the page stays a front page (short, opening with the two commands, a link per topic).

Each fenced block of README.md is preceded by a marker ``<!-- readme: NAME -->``; this module has a check for
every name, and a block without a marker, or with a name nobody checks, fails
``test_every_block_is_run_or_says_why_not``. Commands run in a shell with the venv's ``bin`` first on PATH, from
the repository root, as typed; only the fixed port 8000 is replaced by a free one.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import markdown
from tests.support.docs_pages import (
    ROOT,
    STATELESS_META,
    accepting,
    background,
    headings,
    initialize,
    sh,
    slug,
)
from tests.support.http import free_port
from tests.support.markdown import Block

README = ROOT / "README.md"
NOT_RUN = ("install", "not run")
"""Markers of blocks that are not run here, each saying why in the marker itself."""
CHECKED = {"server", "serve"}

pytestmark = pytest.mark.timeout(120)


def blocks() -> list[Block]:
    return markdown.blocks(README, "readme")


def block(name: str) -> Block:
    return markdown.block(README, "readme", name)


def test_every_block_is_run_or_says_why_not() -> None:
    names = [b.name for b in blocks()]
    unmarked = [b.line for b in blocks() if not b.name]
    assert not unmarked, f"README blocks without a <!-- readme: NAME --> marker, at lines {unmarked}"
    unknown = [n for n in names if n not in CHECKED and not n.startswith(NOT_RUN)]
    assert not unknown, unknown
    assert sorted(set(names) & CHECKED) == sorted(CHECKED), "a check lost its block"


def test_the_opening_block_is_the_two_commands_ci_runs() -> None:
    first = blocks()[0]
    assert first.language == "sh"
    install, test = first.text.splitlines()
    assert install.endswith("uvicorn app:asgi")
    assert test.endswith("python -m pytest")
    ci = subprocess.run(["awk", r"/^```sh$/{inside=1; next} /^```$/{if (inside) exit} inside", str(README)],
                        capture_output=True, text=True, check=True).stdout.splitlines()
    assert ci[1] == test  # what .ci/run extracts and runs


def test_the_readme_is_a_front_page() -> None:
    """Under 8 KB, and every page of the documentation is one link away."""
    text = README.read_text()
    assert len(text.encode()) < 8 * 1024, len(text.encode())
    pages = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md") if p.name != "index.md")
    missing = [page for page in pages if f"]({page})" not in text and f"]({page}#" not in text]
    assert not missing, missing


def test_its_links_reach_a_page_and_a_heading() -> None:
    for target in re.findall(r"\]\(([^)\s]+)\)", README.read_text()):
        if re.match(r"https?://", target):
            continue
        file, _, anchor = target.partition("#")
        assert (ROOT / file).is_file(), target
        if anchor:
            assert anchor in [slug(h) for _, h in headings((ROOT / file).read_text())], target


def test_the_server_block_is_examples_word_count() -> None:
    source = (ROOT / "examples" / "word_count.py").read_text()
    without_docstring = source[source.index('"""', 3) + 3:].lstrip("\n")
    assert block("server").text == without_docstring


def _serve_line(n: int) -> str:
    return block("serve").text.splitlines()[n].split("#")[0].strip()


def test_the_stdio_serve_command_answers_a_call() -> None:
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": "word_count", "arguments": {"text": "read the wire"}, "_meta": STATELESS_META}}
    answered = sh(_serve_line(0), input=json.dumps(request) + "\n")
    assert answered.returncode == 0, answered.stderr
    assert json.loads(answered.stdout)["result"]["structuredContent"] == {"words": 3, "chars": 13}


@pytest.mark.parametrize("line", [1, 2])
def test_the_http_serve_commands_serve_word_count(line: int) -> None:
    port = free_port()
    command = _serve_line(line)
    command = command.replace("8000", str(port)) if "8000" in command else f"{command} --port {port}"
    with background(command) as process:
        accepting(process, port)
        answer = initialize(f"http://127.0.0.1:{port}/mcp")
    assert answer.status_code == 200, answer.text
    assert answer.json()["result"]["serverInfo"]["name"] == "word_count"


def test_the_interpreter_is_this_venvs() -> None:
    """The commands run with this venv's ``bin`` first on PATH, as the opening commands leave the reader."""
    assert sh("command -v wiremcp").stdout.strip() == str(Path(sys.executable).parent / "wiremcp")
