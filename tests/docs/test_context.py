"""``docs/context.md``, run: the booking handler in both eras (what it logs, asks and answers), the handlers that
do without a client capability, the low-level ``InputRequired`` round with its sealed ``requestState``, and the
command that makes a ``requestState`` key."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from tests.support.docs_pages import DOCS, block, exec_as_file, notifications, sh
from wiremcp import MCPError
from wiremcp.request_state import RequestStateSealer
from wiremcp.transports import Client

pytestmark = pytest.mark.timeout(120)

PAGE = DOCS / "context.md"
CHECKED = {"handler", "without-capability", "input-required", "request-state-keys", "lifespan"}
ERAS = ["2025-11-25", "2026-07-28"]


@pytest.mark.parametrize("era", ERAS)
async def test_the_handler_example_books_a_table(era: str, tmp_path: Path) -> None:
    server = exec_as_file(PAGE, "handler", tmp_path / "server.py")["server"]
    asked: list[Any] = []

    async def elicitation(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params["message"])
        assert set(params["requestedSchema"]["properties"]) == {"date", "seats"}
        return {"action": "accept", "content": {"date": "Friday", "seats": 2}}

    async def sampling(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params["messages"][0]["content"]["text"])
        return {"role": "assistant", "content": {"type": "text", "text": "Booked for two on Friday."},
                "model": "test"}

    async with Client(server, protocol_version=era, elicitation=elicitation, sampling=sampling,
                      log_level="info") as client:
        (tool,) = await client.list_tools()
        if not client.stateless:
            await client.set_logging_level("info")
        result = await client.call_tool("book", {"venue": "Luigi's"}, progress_token="p")
    assert result["content"][0]["text"] == "Booked for two on Friday."
    assert asked == ["When, and how many?", "Write a one-line confirmation for date='Friday' seats=2"]
    assert list(tool["inputSchema"]["properties"]) == ["venue"]  # the Context parameter is not an argument
    if era == "2025-11-25":  # (2026-07-28: the notifications of each round go with that round's answer)
        assert [(n["level"], n["data"]) for n in notifications(client, "notifications/message")] == [
            ("info", "booking at Luigi's")]
        assert [(n["progress"], n["total"]) for n in notifications(client, "notifications/progress")] == [(0, 2), (2, 2)]


@pytest.mark.parametrize("era", ERAS)
async def test_a_declined_booking_is_a_tool_error(era: str, tmp_path: Path) -> None:
    server = exec_as_file(PAGE, "handler", tmp_path / "server.py")["server"]

    async def elicitation(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "decline"}

    async with Client(server, protocol_version=era, elicitation=elicitation) as client:
        result = await client.call_tool("book", {"venue": "Luigi's"})
    assert result["isError"] is True
    assert result["content"][0]["text"] == "the user declined"


@pytest.mark.parametrize("era", ERAS)
async def test_a_client_without_elicitation_gets_minus_32021_naming_it(era: str, tmp_path: Path) -> None:
    server = exec_as_file(PAGE, "handler", tmp_path / "server.py")["server"]
    async with Client(server, protocol_version=era) as client:
        with pytest.raises(MCPError) as refused:
            await client.call_tool("book", {"venue": "Luigi's"})
    assert refused.value.code == -32021
    assert refused.value.message == "Missing required client capability: elicitation"
    assert refused.value.data == {"requiredCapabilities": {"elicitation": {}}}


@pytest.mark.parametrize("era", ERAS)
async def test_the_handlers_do_without_what_the_client_does_not_offer(era: str, tmp_path: Path) -> None:
    server = exec_as_file(PAGE, "without-capability", tmp_path / "server.py")["server"]
    text = "A long text.\nWith a second line."
    async with Client(server, protocol_version=era) as client:
        plain = await client.call_tool("summarize", {"text": text})
        folder = await client.call_tool("workspace")
    assert plain["content"][0]["text"] == "A long text."
    assert folder["content"][0]["text"] == "file:///srv/work"

    async def sampling(params: dict[str, Any]) -> dict[str, Any]:
        return {"role": "assistant", "content": {"type": "text", "text": "Two lines."}, "model": "test"}

    async def roots(params: dict[str, Any]) -> dict[str, Any]:
        return {"roots": [{"uri": "file:///home/me/project", "name": "project"}]}

    async with Client(server, protocol_version=era, sampling=sampling, roots=roots) as client:
        sampled = await client.call_tool("summarize", {"text": text})
        rooted = await client.call_tool("workspace")
    assert sampled["content"][0]["text"] == "Two lines."
    assert rooted["content"][0]["text"] == "file:///home/me/project"


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize(("sure", "said"), [(True, "billing: deployed (deploy:billing)"),
                                            (False, "billing: not deployed")])
async def test_the_low_level_round_asks_then_reads_the_answer_and_its_state(era: str, sure: bool, said: str,
                                                                            tmp_path: Path) -> None:
    server = exec_as_file(PAGE, "input-required", tmp_path / "server.py")["server"]
    asked: list[str] = []

    async def elicitation(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params["message"])
        return {"action": "accept", "content": {"sure": sure}}

    async with Client(server, protocol_version=era, elicitation=elicitation) as client:
        result = await client.call_tool("deploy", {"service": "billing"})
    assert result["content"][0]["text"] == said
    assert asked == ["Deploy to production?"]


async def test_a_request_state_that_does_not_verify_is_refused_with_minus_32602(tmp_path: Path) -> None:
    server = exec_as_file(PAGE, "input-required", tmp_path / "server.py")["server"]

    async def elicitation(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "accept", "content": {"sure": True}}

    async with Client(server, protocol_version="2026-07-28", elicitation=elicitation) as client:
        params = client.with_meta({"name": "deploy", "arguments": {"service": "billing"}})
        first = (await client.request_raw("tools/call", params))["result"]
        assert first["resultType"] == "input_required"
        answers = {"confirm": {"action": "accept", "content": {"sure": True}}}
        other = client.with_meta({"name": "deploy", "arguments": {"service": "payroll"}})  # not what was asked
        for sent in ({**params, "inputResponses": answers, "requestState": first["requestState"][:-4] + "AAAA"},
                     {**other, "inputResponses": answers, "requestState": first["requestState"]}):
            refused = await client.request_raw("tools/call", sent)
            assert refused["error"]["code"] == -32602, refused
        done = await client.request_raw("tools/call", {**params, "inputResponses": answers,
                                                       "requestState": first["requestState"]})
    assert done["result"]["content"][0]["text"] == "billing: deployed (deploy:billing)"


def test_the_request_state_key_command_makes_a_key_the_server_takes() -> None:
    command = block(PAGE, "request-state-keys").text.strip()
    assert command.startswith("export WIREMCP_REQUEST_STATE_KEYS=$(")
    made = sh(f"{command}; echo \"$WIREMCP_REQUEST_STATE_KEYS\"")
    assert made.returncode == 0, made.stderr
    key = made.stdout.strip()
    assert len(base64.urlsafe_b64decode(key)) == 32
    RequestStateSealer.from_strings((key,))  # accepted


async def test_the_lifespan_example_opens_its_pool_for_the_requests_and_closes_it_after(tmp_path: Path) -> None:
    namespace = exec_as_file(PAGE, "lifespan", tmp_path / "server.py")
    server = namespace["server"]
    async with Client(server) as client:
        answer = await client.call_tool("row", {"key": "7"})
        pool = server.lifespan_state
        assert pool.open
    assert answer["content"] == [{"type": "text", "text": "row 7"}]
    assert not pool.open
    assert server.lifespan_state is None
