"""Bridging stdio and HTTP both ways, driven by the official MCP client in both eras:

- ``wiremcp http -- COMMAND ARGS...`` serves a stdio server over Streamable HTTP (here ``wiremcp stdio
  examples/everything.py``, launched once by the serving process);
- ``wiremcp bridge URL`` serves a Streamable HTTP server on stdio (here ``uvicorn app:asgi`` serving
  ``examples/everything.py``), as a host that only launches commands would start it.

Each way, the upstream's tools answer, and its requests for input (sampling, elicitation) reach the client in
the client's era: as requests on the call's stream (handshake era) or input rounds (stateless era).
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.support.http import ROOT, UvicornProcess, run_uvicorn, run_wiremcp_http_command
from tests.support.official_client import WAIT, Answers, connect, only_text

pytestmark = [pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
              pytest.mark.timeout(60)]

EVERYTHING_STDIO = [sys.executable, "-m", "wiremcp", "stdio", "examples/everything.py"]
ASKING = [
    pytest.param("auto", id="auto-2026-07-28", marks=[pytest.mark.spec(f"2026-07-28/{section}") for section in (
        "basic/patterns/mrtr#basic-workflow", "client/elicitation#form-mode-elicitation-requests",
        "client/sampling#creating-messages")]),
    pytest.param("legacy", id="legacy-2025-11-25", marks=[pytest.mark.spec(f"2025-11-25/{section}") for section in (
        "client/elicitation#form-mode-elicitation-requests", "client/sampling#creating-messages")])]


@pytest.fixture(scope="module")
def served_command() -> Iterator[UvicornProcess]:
    with run_wiremcp_http_command(EVERYTHING_STDIO) as process:
        yield process


@pytest.fixture(scope="module")
def remote_everything() -> Iterator[UvicornProcess]:
    with run_uvicorn("examples.everything:server") as process:
        yield process


@asynccontextmanager
async def bridged(url: str, mode: str, answers: Answers) -> AsyncIterator[Client]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "wiremcp", "bridge", url], cwd=ROOT,
                                   env={"WIREMCP_LOG_LEVEL": "WARNING", "PYTHONDONTWRITEBYTECODE": "1"})
    async with Client(stdio_client(params), mode=mode, read_timeout_seconds=WAIT, **answers.callbacks) as client:
        yield client


async def _asks_through(client: Client, answers: Answers) -> None:
    sampling = await client.call_tool("test_sampling", {"prompt": "Capital of France?"})
    elicitation = await client.call_tool("test_elicitation", {"message": "Favourite colour?"})
    assert only_text(sampling.content) == "LLM response: Paris"
    assert only_text(elicitation.content) == "User response: action=accept, response=blue"
    assert [params.message for params in answers.elicited] == ["Favourite colour?"]
    assert len(answers.sampled) == 1


@pytest.mark.parametrize("mode", ASKING)
async def test_a_stdio_server_served_over_http_answers_and_asks_the_client(
        mode: str, served_command: UvicornProcess) -> None:
    answers = Answers()
    async with connect(served_command, mode, **answers.callbacks) as client:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        assert {"test_simple_text", "test_sampling", "test_elicitation"} <= tools
        assert only_text((await client.call_tool("test_simple_text", {})).content) == \
            "This is a simple text response for testing."
        await _asks_through(client, answers)


@pytest.mark.parametrize("mode", ASKING)
async def test_a_remote_server_bridged_onto_stdio_answers_and_asks_the_client(
        mode: str, remote_everything: UvicornProcess) -> None:
    answers = Answers()
    async with bridged(remote_everything.url, mode, answers) as client:
        assert client.server_info is not None
        assert client.server_info.name == "wiremcp-everything"  # the upstream's, not the bridge's
        resources = {resource.uri for resource in (await client.list_resources()).resources}
        assert "test://static-text" in resources
        await _asks_through(client, answers)
