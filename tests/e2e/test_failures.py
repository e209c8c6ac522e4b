"""An exception's text never reaches a client: every kind of handler of ``tests/support/failing_server.py``
raises with a secret in its message, under a real uvicorn (the handshake era on a session, and the stateless
era) and over ``wiremcp stdio`` (both eras). Each answer is the generic message with a reference, the exact
JSON-RPC code or a tool result with ``isError``; the server's log has that reference with the traceback, and
``WIREMCP_ERROR_DETAILS=true`` shows the text to a developer."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.support.failing_server import SECRET
from tests.support.failures import REFERENCE, masked_error, reference_in
from tests.support.http import UvicornProcess, initialize, run_uvicorn
from tests.support.stateless_http import Call, post, with_meta
from tests.support.stdio import Spawn, StdioProcess, spawn  # noqa: F401 - spawn: the fixture of the stdio tests
from wiremcp.protocol import TASKS_EXTENSION

SERVER = "tests.support.failing_server:server"
CAPABILITIES: dict[str, Any] = {"extensions": {TASKS_EXTENSION: {}}}
ENV = {"WIREMCP_TASK_POLL_INTERVAL_MS": "20", "WIREMCP_JSON_RESPONSE": "true"}
TASK_BOUND = 20.0
"""Failure bound for a failing task to end; it ends at once, generous for loaded machines."""
POLLS = 1000
"""At most this many ``tasks/get`` (20 ms apart: the poll interval ``ENV`` sets) before the bound."""

pytestmark = pytest.mark.timeout(90)


@dataclass(frozen=True)
class Case:
    """A request that makes one kind of handler fail, and the words its answer must be (with a reference)."""

    label: str
    method: str
    params: dict[str, Any]
    what: str
    as_result: bool = False
    """A tool's failure is a result with ``isError``; every other failure a JSON-RPC -32603 error."""
    escaped: bool = False
    """The exception escaped every handler (a middleware's): the stateless era's HTTP answer is 500, as for
    any internal error; everything else is answered with 200 in both eras."""


CASES = (
    Case("tool", "tools/call", {"name": "leak", "arguments": {}}, "Error executing tool leak", as_result=True),
    Case("sync tool", "tools/call", {"name": "leak_sync", "arguments": {}}, "Error executing tool leak_sync",
         as_result=True),
    Case("output schema", "tools/call", {"name": "wrong_shape", "arguments": {}},
         "Tool wrong_shape returned a result that does not match its output schema", as_result=True),
    Case("middleware", "tools/call", {"name": "guarded", "arguments": {}}, "Internal error handling tools/call",
         escaped=True),
    Case("resource", "resources/read", {"uri": "secret://static"}, "Error reading resource secret://static"),
    Case("resource template", "resources/read", {"uri": "secret://items/a"},
         "Error reading resource secret://items/a"),
    Case("prompt", "prompts/get", {"name": "review", "arguments": {"topic": "x"}}, "Error rendering prompt review"),
    Case("completion", "completion/complete",
         {"ref": {"type": "ref/prompt", "name": "review"}, "argument": {"name": "topic", "value": ""}},
         "Completion of topic for review failed"),
)

Exchange = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]
"""Send one request (method, params without ``_meta``) and return the whole JSON-RPC response."""


def reference_of(case: Case, response: dict[str, Any]) -> str:
    if case.as_result:
        result = response["result"]
        assert result["isError"] is True, (case.label, result)
        assert "structuredContent" not in result
        (block,) = result["content"]
        return reference_in(block["text"], case.what)
    return masked_error(response["error"], case.what)


async def task_reference(exchange: Exchange, stateless: bool) -> str:
    """Run ``leak_task`` as a task and read how it ended: in the handshake era ``tasks/result`` waits for it
    and answers with the tool's result; in the stateless era ``tasks/get`` is polled, at the interval the
    server asks for, until the task is done and carries that result."""
    if stateless:
        created = (await exchange("tools/call", {"name": "leak_task", "arguments": {}}))["result"]
        assert created["resultType"] == "task", created
        async with asyncio.timeout(TASK_BOUND):
            for _ in range(POLLS):
                state = (await exchange("tasks/get", {"taskId": created["taskId"]}))["result"]
                if state["status"] != "working":
                    break
                await asyncio.sleep(state["pollIntervalMs"] / 1000)  # what the server asks a client to do
        assert state["status"] == "completed", state
        result = state["result"]
    else:
        created = (await exchange("tools/call", {"name": "leak_task", "arguments": {}, "task": {"ttl": 60000}}))
        task_id = created["result"]["task"]["taskId"]
        result = (await exchange("tasks/result", {"taskId": task_id}))["result"]
        state = (await exchange("tasks/get", {"taskId": task_id}))["result"]
        assert state["status"] == "failed", state
        assert SECRET not in str(state)
    assert result["isError"] is True, result
    return reference_in(result["content"][0]["text"], "Error executing tool leak_task")


async def every_case(exchange: Exchange, stateless: bool) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """The reference of every case's answer, and every answer."""
    references: dict[str, str] = {}
    answers: list[dict[str, Any]] = []

    async def seen(method: str, params: dict[str, Any]) -> dict[str, Any]:
        answers.append(answer := await exchange(method, params))
        return answer

    for case in CASES:
        references[case.label] = reference_of(case, await seen(case.method, case.params))
    references["task"] = await task_reference(seen, stateless)
    return references, answers


def assert_masked_and_logged(references: dict[str, str], answers: list[dict[str, Any]], log: str) -> None:
    said = str(answers)
    assert SECRET not in said
    assert "hunter2" not in said
    assert "Traceback" not in said
    assert "RuntimeError" not in said
    assert len(set(references.values())) == len(references), references
    for label, reference in references.items():
        logged = re.search(rf"ERROR wiremcp\.failures: .* \(reference {reference}\)\nTraceback", log)
        assert logged, f"{label}: reference {reference} is not in the log with its traceback:\n{log}"
    assert log.count(SECRET) >= len(references)  # the text is the operator's, in the tracebacks


# -- over HTTP ----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def served() -> Iterator[UvicornProcess]:
    with run_uvicorn(SERVER, {**ENV, "WIREMCP_LOG_LEVEL": "INFO"}) as server:
        yield server


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=10) as client:
        yield client


def json_answer(response: httpx.Response, status: int = 200) -> dict[str, Any]:
    assert response.status_code == status, (response.status_code, response.text)
    assert response.headers["content-type"] == "application/json"
    body: dict[str, Any] = response.json()
    return body


async def test_the_handshake_era_over_http_never_shows_an_exceptions_text(
        served: UvicornProcess, http: httpx.AsyncClient) -> None:
    session = await initialize(http, served.url, "2025-11-25")

    async def exchange(method: str, params: dict[str, Any]) -> dict[str, Any]:
        return json_answer(await session.request(method, params))

    references, answers = await every_case(exchange, stateless=False)
    assert_masked_and_logged(references, answers, served.output())


async def test_the_stateless_era_over_http_never_shows_an_exceptions_text(
        served: UvicornProcess, http: httpx.AsyncClient) -> None:
    escaping = {case.params["name"] for case in CASES if case.escaped}

    async def exchange(method: str, params: dict[str, Any]) -> dict[str, Any]:
        named: dict[str, str | None] = {"Mcp-Name": params["taskId"]} if "taskId" in params else {}
        response = await post(http, served.url, Call(method, with_meta(params, capabilities=CAPABILITIES), named))
        return json_answer(response, 500 if params.get("name") in escaping else 200)

    references, answers = await every_case(exchange, stateless=True)
    assert_masked_and_logged(references, answers, served.output())


# -- over stdio ---------------------------------------------------------------------------------------------
def stdio_exchange(process: StdioProcess, stateless: bool) -> Exchange:
    ids = iter(range(1, 1000))

    async def exchange(method: str, params: dict[str, Any]) -> dict[str, Any]:
        rid = next(ids)
        await process.request(rid, method, with_meta(params, capabilities=CAPABILITIES) if stateless else params)
        return await process.response(rid)

    return exchange


@pytest.mark.parametrize("era", ["handshake", "stateless"])
async def test_over_stdio_never_shows_an_exceptions_text(era: str, spawn: Spawn) -> None:  # noqa: F811
    process = await spawn(SERVER, env=ENV)
    if era == "handshake":
        await process.initialize()
    references, answers = await every_case(stdio_exchange(process, era == "stateless"), era == "stateless")
    await process.close_stdin()
    assert await process.wait_exit() == 0
    assert_masked_and_logged(references, answers, await process.stderr_to_eof())


# -- the development switch ---------------------------------------------------------------------------------
@pytest.mark.setting("WIREMCP_ERROR_DETAILS")
async def test_error_details_shows_a_developer_the_exceptions_type_and_text(spawn: Spawn) -> None:  # noqa: F811
    process = await spawn(SERVER, env={**ENV, "WIREMCP_ERROR_DETAILS": "true"})
    exchange = stdio_exchange(process, stateless=True)
    tool = await exchange("tools/call", {"name": "leak", "arguments": {}})
    prompt = await exchange("prompts/get", {"name": "review", "arguments": {"topic": "x"}})
    reference_in(tool["result"]["content"][0]["text"],
                 f"Error executing tool leak: RuntimeError: connect failed: {SECRET}")
    assert re.fullmatch(rf"Error rendering prompt review: RuntimeError: connect failed: {SECRET} {REFERENCE}",
                        prompt["error"]["message"])
