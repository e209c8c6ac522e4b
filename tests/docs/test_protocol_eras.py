"""``docs/protocol-eras.md``, run: the stdio transcript and its try-it line, the curl examples of both eras against
a real ``uvicorn app:asgi`` (with real curl), and the refusal of a version no era speaks."""

from __future__ import annotations

import shlex

import httpx
import pytest

from tests.support.docs_pages import DOCS, accepting, background, block, curl, script_against, sh
from tests.support.http import ACCEPT_BOTH, free_port

pytestmark = pytest.mark.timeout(120)

PAGE = DOCS / "protocol-eras.md"
CHECKED = {"wire-in", "wire-out", "try-it", "curl-handshake", "curl-handshake-out", "curl-stateless",
           "curl-stateless-out"}
STDIO = "wiremcp stdio examples/word_count.py"


def test_the_wire_transcript_is_what_the_stdio_server_answers() -> None:
    assert f"(`{STDIO}`)" in PAGE.read_text()
    answered = sh(STDIO, input=block(PAGE, "wire-in").text)
    assert answered.returncode == 0, answered.stderr
    assert answered.stdout == block(PAGE, "wire-out").text


def test_the_try_it_line_answers_the_same() -> None:
    """The ``printf ... | wiremcp stdio ...`` line, with the four lines put in."""
    command = block(PAGE, "try-it").text.strip()
    assert command.startswith("printf ")
    for n, message in enumerate(block(PAGE, "wire-in").text.splitlines(), start=1):
        command = command.replace(f"'<line {n}>'", shlex.quote(message))
    answered = sh(command)
    assert answered.returncode == 0, answered.stderr
    assert answered.stdout == block(PAGE, "wire-out").text


@pytest.mark.parametrize("era", ["handshake", "stateless"])
def test_the_curl_examples_print_what_the_page_says(era: str) -> None:
    """The curl commands of each era, run as typed (with real curl) against ``uvicorn app:asgi`` serving
    word_count, print the answer the page shows."""
    curl("the page's curl examples")
    assert "`WIREMCP_SERVER=examples.word_count:server uvicorn app:asgi` (port 8000)" in PAGE.read_text()
    done = script_against("WIREMCP_SERVER=examples.word_count:server uvicorn app:asgi --port {port}",
                          block(PAGE, f"curl-{era}").text)
    assert done.returncode == 0, done.stderr
    assert done.stdout + "\n" == block(PAGE, f"curl-{era}-out").text, done.stdout


def test_a_version_no_era_speaks_is_refused_with_the_supported_ones() -> None:
    """What "How one endpoint tells them apart" says of an unknown version: 400, -32022, data.supported."""
    port = free_port()
    meta = {"io.modelcontextprotocol/protocolVersion": "2029-01-01", "io.modelcontextprotocol/clientCapabilities": {}}
    with background(f"WIREMCP_SERVER=examples.word_count:server uvicorn app:asgi --port {port}") as process:
        accepting(process, port)
        answer = httpx.post(f"http://127.0.0.1:{port}/mcp", timeout=10,
                            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}},
                            headers={"accept": ACCEPT_BOTH, "mcp-protocol-version": "2029-01-01",
                                     "mcp-method": "tools/list"})
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["code"] == -32022
    supported = ", ".join(error["data"]["supported"])
    assert f"`{supported}`" in PAGE.read_text()
    assert error["data"]["requested"] == "2029-01-01"
