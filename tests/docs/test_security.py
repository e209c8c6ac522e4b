"""``docs/security.md``, run: the Host and Origin refusals with real curl against ``wiremcp http``, a body past
``WIREMCP_MAX_MESSAGE_BYTES``, and the failing tool whose secret the client never sees (its reference in the
log instead)."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import httpx
import pytest

from tests.support.docs_pages import (
    DOCS,
    accepting,
    background,
    block,
    curl,
    exec_as_file,
    script_against,
)
from tests.support.http import ACCEPT_BOTH, free_port
from wiremcp.transports import Client
from wiremcp.transports.guard import LOOPBACK_HOSTS

pytestmark = pytest.mark.timeout(120)

PAGE = DOCS / "security.md"
CHECKED = {"host-check", "host-check-out", "failure"}


def test_a_foreign_host_and_origin_are_refused_as_the_page_shows() -> None:
    curl("the page's curl example")
    assert "(`wiremcp http examples/word_count.py`)" in PAGE.read_text()
    done = script_against("wiremcp http examples/word_count.py --port {port}", block(PAGE, "host-check").text)
    assert done.returncode == 0, done.stderr
    assert done.stdout == block(PAGE, "host-check-out").text


def test_the_default_hosts_are_the_guards() -> None:
    assert f"(default `{','.join(LOOPBACK_HOSTS)}`)" in PAGE.read_text()


def test_a_body_past_the_limit_is_413() -> None:
    """``WIREMCP_MAX_MESSAGE_BYTES``, as "How much a client may send" says (a small limit, to send past it)."""
    port = free_port()
    with background(f"wiremcp http examples/word_count.py --port {port}", WIREMCP_MAX_MESSAGE_BYTES="1024") as process:
        accepting(process, port)
        answer = httpx.post(f"http://127.0.0.1:{port}/mcp", content=b"{" + b" " * 2048 + b"}", timeout=10,
                            headers={"accept": ACCEPT_BOTH, "content-type": "application/json"})
    assert answer.status_code == 413, answer.text
    assert answer.json()["error"]["code"] == -32600


async def test_a_failing_tool_answers_a_reference_and_logs_the_secret_under_it(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    server = exec_as_file(PAGE, "failure", tmp_path / "server.py")["server"]
    with caplog.at_level(logging.ERROR, logger="wiremcp.failures"):
        async with Client(server) as client:
            result = await client.call_tool("lookup", {"name": "ada"})
    assert result["isError"] is True
    (content,) = result["content"]
    said = re.fullmatch(r"Error executing tool lookup \(reference ([0-9a-f]{8})\)", content["text"])
    assert said is not None, content
    assert "s3cret" not in json.dumps(result)
    logged = [r for r in caplog.records if r.name == "wiremcp.failures"]
    assert any(said.group(1) in r.getMessage() and r.exc_info for r in logged), logged
    assert "`Error executing tool lookup (reference 3f9a0c2e)`" in " ".join(PAGE.read_text().split())
