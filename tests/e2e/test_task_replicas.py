"""Tasks across replicas: two real ``uvicorn app:asgi`` processes serving ``tests.support.task_server`` and
sharing one real ``redis-server``; the client picks the replica for every request.

- the 2026-07-28 extension (``io.modelcontextprotocol/tasks``): a task created on A is polled and
  cancelled on B, and its handler on A stops; a finished task reads ``completed`` with its result
  inlined on the other replica; a task whose replica is SIGKILLed ends ``failed`` on the survivor; a
  real SIGTERM to a replica running a task (in both eras) fails it after the drain, as the survivor reads; a
  task asking for input shows ``input_required`` on B, takes the answer there (``tasks/update``) and
  completes on A;
- the 2025-11-25 experimental tasks: another session can neither see, wait for, nor cancel a task; a
  task's elicitation goes out on the ``tasks/result`` stream (on the replica running it, or on the
  other one) and the answer, POSTed to either replica, reaches the handler;
- the official ``mcp`` client (stateless era, one replica of ``examples.everything``) declares the
  extension, claims the ``resultType: "task"`` answer and polls ``tasks/get``, all through its public
  extension API (``ClientExtension``, ``ResultClaim``, ``ClientSession.send_request``).

Nothing sleeps: every wait polls the task's status (the event itself) against a deadline.
"""

from __future__ import annotations

import itertools
import signal
import time
from collections.abc import Collection, Iterator, Sequence
from typing import Any, Literal

import httpx
import pytest
from mcp import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult, Request, RequestParams, Result

from tests.support.http import (
    READ_BOUND,
    RawSession,
    SSEReader,
    UvicornProcess,
    error_of,
    initialize,
    request_body,
    run_replicas,
    run_uvicorn,
)
from tests.support.redis import RedisServer
from tests.support.replicas import LEASE, RESTART_LEASE, TASKS, replica_env
from tests.support.stateless_http import Call, post, result_of, with_meta
from tests.support.task_server import CONFIRM_SCHEMA
from wiremcp.protocol import TASKS_EXTENSION
from wiremcp.task_runner import SHUT_DOWN

RELATED_TASK = "io.modelcontextprotocol/related-task"
WITH_TASKS: dict[str, Any] = {"extensions": {TASKS_EXTENSION: {}}}
WITH_TASKS_AND_ELICITATION: dict[str, Any] = {**WITH_TASKS, "elicitation": {}}
ACTIVE = frozenset({"working", "input_required"})
INTERNAL_ERROR = -32603
INVALID_PARAMS = -32602

pytestmark = [pytest.mark.timeout(60), pytest.mark.spec("2026-07-28/extensions/tasks#task-polling")]

_names = itertools.count(1)


def unique(prefix: str) -> str:
    """A job name no other test uses (the fixture server keeps its events for as long as it runs)."""
    return f"{prefix}{next(_names)}"


@pytest.fixture(scope="module")
def replicas(redis: RedisServer) -> Iterator[tuple[UvicornProcess, UvicornProcess]]:
    with run_replicas(TASKS, {name: replica_env(redis, name) for name in ("XA", "XB")}) as running:
        yield running["XA"], running["XB"]


def on(session: RawSession, replica: UvicornProcess) -> RawSession:
    """The same session, addressed to another replica; its request ids go on from the same counter (a
    request still open elsewhere keeps its id)."""
    return RawSession(session.client, replica.url, session.sid, session.version, _ids=session._ids)


# -- the stateless era, by hand ---------------------------------------------------------------------------
def stateless(method: str, params: dict[str, Any], capabilities: dict[str, Any] | None = None) -> Call:
    """A 2026-07-28 request with its ``_meta`` and headers; ``tasks/*`` carry the task id as ``Mcp-Name``."""
    headers: dict[str, str | None] = {}
    if method.startswith("tasks/"):
        headers["Mcp-Name"] = params["taskId"]
    return Call(method, with_meta(params, capabilities=WITH_TASKS if capabilities is None else capabilities),
                headers)


async def stateless_result(http: httpx.AsyncClient, replica: UvicornProcess, method: str, params: dict[str, Any],
                 capabilities: dict[str, Any] | None = None) -> Any:
    """The result of a stateless request answered with application/json."""
    call = stateless(method, params, capabilities)
    return result_of(await post(http, replica.url, call), call.rid)


async def stateless_text(http: httpx.AsyncClient, replica: UvicornProcess, tool: str, **arguments: Any) -> str:
    result = await stateless_result(http, replica, "tools/call", {"name": tool, "arguments": arguments})
    assert result["resultType"] == "complete", result
    assert not result.get("isError"), result
    return str(result["content"][0]["text"])


async def create(http: httpx.AsyncClient, replica: UvicornProcess, tool: str,
                 capabilities: dict[str, Any] | None = None, **arguments: Any) -> str:
    """Call ``tool`` declaring the tasks extension: the server answers a flat ``CreateTaskResult``."""
    created = await stateless_result(http, replica, "tools/call", {"name": tool, "arguments": arguments}, capabilities)
    assert created["resultType"] == "task", created
    assert created["status"] == "working", created
    assert isinstance(created["ttlMs"], int), created
    task_id: str = created["taskId"]
    return task_id


async def get(http: httpx.AsyncClient, replica: UvicornProcess, task_id: str) -> Any:
    state = await stateless_result(http, replica, "tasks/get", {"taskId": task_id})
    assert state["resultType"] == "complete", state
    assert state["taskId"] == task_id, state
    return state


async def until(http: httpx.AsyncClient, replica: UvicornProcess, task_id: str, leaving: Collection[str],
                bound: float = READ_BOUND) -> Any:
    """Poll ``tasks/get`` until the task's status is none of ``leaving``; fails after ``bound`` seconds."""
    deadline = time.monotonic() + bound
    while (state := await get(http, replica, task_id))["status"] in leaving:
        assert time.monotonic() < deadline, f"the task stayed {state['status']}: {state}"
    return state


def ack(result: Any) -> None:
    """An empty acknowledgement, as the stateless era sends it."""
    assert result["resultType"] == "complete", result
    assert set(result) <= {"resultType", "_meta"}, result


# -- the 2026-07-28 extension ----------------------------------------------------------------------------------
async def test_a_task_created_on_one_replica_is_polled_and_cancelled_on_the_other(
        replicas: tuple[UvicornProcess, UvicornProcess], http: httpx.AsyncClient) -> None:
    a, b = replicas
    name = unique("s-cancel")
    task_id = await create(http, a, "job", name=name)
    working = await get(http, b, task_id)
    assert working["status"] == "working", working
    assert not {"result", "error", "inputRequests"} & set(working), working
    ack(await stateless_result(http, b, "tasks/cancel", {"taskId": task_id}))
    assert await stateless_text(http, a, "outcome", name=name) == "cancelled"  # the handler on A was stopped
    cancelled = await get(http, a, task_id)
    assert cancelled["status"] == "cancelled", cancelled
    assert not {"result", "error", "inputRequests"} & set(cancelled), cancelled
    ack(await stateless_result(http, a, "tasks/cancel", {"taskId": task_id}))  # a task that has ended: still an ack

    name = unique("s-done")
    done_id = await create(http, a, "job", name=name)
    assert await stateless_text(http, a, "finish", name=name) == "ok"
    completed = await until(http, b, done_id, ACTIVE)
    assert completed["status"] == "completed", completed
    assert completed["result"]["content"] == [{"type": "text", "text": f"{name} done"}], completed
    assert not completed["result"].get("isError"), completed
    assert await stateless_text(http, a, "outcome", name=name) == "finished"


@pytest.mark.spec("2026-07-28/extensions/tasks#task-status")
async def test_a_task_whose_replica_is_killed_ends_failed_on_the_survivor(
        redis: RedisServer, replicas: tuple[UvicornProcess, UvicornProcess], http: httpx.AsyncClient) -> None:
    _, survivor = replicas
    with run_uvicorn(TASKS, replica_env(redis, "XK")) as doomed:
        task_id = await create(http, doomed, "job", name=unique("s-orphan"))
        assert (await get(http, survivor, task_id))["status"] == "working"  # the lease is still held
        before = doomed.output()
        doomed.process.send_signal(signal.SIGKILL)
        doomed.process.wait(READ_BOUND)
    assert "Traceback" not in before, before
    killed = time.monotonic()
    failed = await until(http, survivor, task_id, ACTIVE)
    assert failed["status"] == "failed", failed
    assert time.monotonic() - killed < LEASE + READ_BOUND
    assert "stopped before it finished" in failed["statusMessage"], failed
    assert failed["error"]["code"] == INTERNAL_ERROR, failed
    assert failed["error"]["message"], failed
    assert failed["error"]["data"] == {"replica": "XK", "retryable": True}, failed
    assert "result" not in failed, failed
    assert (await get(http, survivor, task_id))["status"] == "failed"  # and stays so


def sigterm_and_wait(process: UvicornProcess) -> str:
    """A real SIGTERM to the uvicorn process; its exit (after the drain) is awaited, its output returned."""
    output = process.stop_and_wait()
    assert "timeout graceful shutdown exceeded" not in output, output  # the drain ended it, not uvicorn
    return output


def assert_shut_down(state: Any) -> None:
    assert state["status"] == "failed", state
    assert state["statusMessage"] == SHUT_DOWN, state
    assert state["error"]["code"] == INTERNAL_ERROR, state
    assert state["error"]["data"]["retryable"] is True, state
    assert "result" not in state, state


@pytest.mark.setting("WIREMCP_DRAIN_SECONDS")
@pytest.mark.spec("2026-07-28/extensions/tasks#task-status")
async def test_sigterm_with_a_task_running_fails_it_after_the_drain_and_the_survivor_says_so(
        redis: RedisServer, replicas: tuple[UvicornProcess, UvicornProcess], http: httpx.AsyncClient) -> None:
    """A real SIGTERM to a uvicorn running a 2026-07-28 task: the drain (``WIREMCP_DRAIN_SECONDS``) gives
    it its window, then the task is marked failed (retryable) before the process exits; another
    replica reads that from Redis."""
    _, survivor = replicas
    name = unique("s-sigterm")
    with run_uvicorn(TASKS, {**replica_env(redis, "XT"), "WIREMCP_DRAIN_SECONDS": "0.3"}) as stopping:
        task_id = await create(http, stopping, "job", name=name)
        assert (await get(http, survivor, task_id))["status"] == "working"
        sigterm_and_wait(stopping)
    assert_shut_down(await get(http, survivor, task_id))  # already failed when the process was gone


@pytest.mark.setting("WIREMCP_DRAIN_SECONDS")
@pytest.mark.spec("2025-11-25/basic/utilities/tasks#task-status-lifecycle")
async def test_sigterm_with_a_handshake_era_task_running_fails_it_for_its_session_on_the_survivor(
        redis: RedisServer, replicas: tuple[UvicornProcess, UvicornProcess], http: httpx.AsyncClient) -> None:
    _, survivor = replicas
    name = unique("h-sigterm")
    with run_uvicorn(TASKS, {**replica_env(redis, "XU"), "WIREMCP_DRAIN_SECONDS": "0.3"}) as stopping:
        session = await initialize(http, stopping.url)
        task_id = await _legacy_task(session, "job", name=name)
        sigterm_and_wait(stopping)
    state = await on(session, survivor).call("tasks/get", {"taskId": task_id})
    assert (state["status"], state["statusMessage"]) == ("failed", SHUT_DOWN), state
    result = await on(session, survivor).request("tasks/result", {"taskId": task_id})
    code, _ = error_of(result)
    assert code == INTERNAL_ERROR, result.text


@pytest.mark.spec("2026-07-28/extensions/tasks#task-status")
async def test_a_task_of_a_replica_restarted_under_its_id_ends_failed_not_working(
        redis: RedisServer, replicas: tuple[UvicornProcess, UvicornProcess], http: httpx.AsyncClient) -> None:
    """The restarted process is a new life with a lease of its own: the old life's task is orphaned."""
    _, survivor = replicas
    env = {**replica_env(redis, "XR"), "WIREMCP_REPLICA_LEASE_SECONDS": str(RESTART_LEASE)}
    with run_uvicorn(TASKS, env) as doomed:
        task_id = await create(http, doomed, "job", name=unique("s-reborn"))
        doomed.process.send_signal(signal.SIGKILL)
        doomed.process.wait(READ_BOUND)
    with run_uvicorn(TASKS, env):  # the same replica id, within the old life's lease
        failed = await until(http, survivor, task_id, ACTIVE, bound=RESTART_LEASE + READ_BOUND)
    assert failed["status"] == "failed", failed
    assert failed["error"]["data"] == {"replica": "XR", "retryable": True}, failed


@pytest.mark.spec("2026-07-28/extensions/tasks#task-update-requests")
async def test_input_asked_on_one_replica_is_answered_on_the_other(
        replicas: tuple[UvicornProcess, UvicornProcess], http: httpx.AsyncClient) -> None:
    a, b = replicas
    name = unique("s-input")
    task_id = await create(http, a, "confirm", WITH_TASKS_AND_ELICITATION, name=name)
    asking = await until(http, b, task_id, ["working"])
    assert asking["status"] == "input_required", asking
    ((key, request),) = asking["inputRequests"].items()
    assert request == {"method": "elicitation/create",
                       "params": {"mode": "form", "message": f"Go on with {name}?",
                                  "requestedSchema": CONFIRM_SCHEMA}}, asking
    answer = {"action": "accept", "content": {"ok": True}}
    ack(await stateless_result(http, b, "tasks/update", {"taskId": task_id, "inputResponses": {key: answer}}))
    done = await until(http, a, task_id, ACTIVE)
    assert done["status"] == "completed", done
    assert done["result"]["content"][0]["text"] == f"{name}: accept ok=True", done
    assert "inputRequests" not in done, done
    # The key is spent: answering it again changes nothing.
    ack(await stateless_result(http, b, "tasks/update", {"taskId": task_id, "inputResponses": {key: answer}}))
    assert (await get(http, b, task_id))["result"] == done["result"]


# -- the 2025-11-25 experimental tasks ----------------------------------------------------------------------
async def _legacy_task(session: RawSession, tool: str, **arguments: Any) -> str:
    created = await session.call("tools/call", {"name": tool, "arguments": arguments, "task": {"ttl": 60_000}})
    assert created["task"]["status"] == "working", created
    task_id: str = created["task"]["taskId"]
    return task_id


@pytest.mark.spec("2025-11-25/basic/utilities/tasks#task-isolation-and-access-control")
async def test_another_session_can_neither_see_nor_wait_for_nor_cancel_a_task(
        replicas: tuple[UvicornProcess, UvicornProcess], http: httpx.AsyncClient) -> None:
    """The existing replica test checks ``tasks/get``; here ``tasks/cancel``, ``tasks/result`` and
    ``tasks/list`` of a stranger (on the other replica), and a stateless-era request (anonymous)."""
    a, b = replicas
    owner = await initialize(http, a.url)
    name = unique("h-private")
    task_id = await _legacy_task(owner, "job", name=name)
    stranger = await initialize(http, b.url)
    for method in ("tasks/get", "tasks/result", "tasks/cancel"):
        refused = await stranger.request(method, {"taskId": task_id})
        assert refused.status_code == 200, (method, refused.text)
        assert error_of(refused)[0] == INVALID_PARAMS, (method, refused.text)
    assert (await stranger.call("tasks/list", {}))["tasks"] == []
    anonymous = stateless("tasks/cancel", {"taskId": task_id})
    refused = await post(http, b.url, anonymous)
    assert error_of(refused) == (INVALID_PARAMS, anonymous.rid), refused.text
    # Untouched: still working for its owner, on either replica, and its handler still runs.
    assert (await on(owner, b).call("tasks/get", {"taskId": task_id}))["status"] == "working"
    assert await owner.tool("finish", name=name) == "ok"
    assert await owner.tool("outcome", name=name) == "finished"
    result = await on(owner, b).call("tasks/result", {"taskId": task_id})
    assert result["content"][0]["text"] == f"{name} done", result


@pytest.mark.spec("2025-11-25/basic/utilities/tasks#input-required-status")
@pytest.mark.parametrize(("result_on", "answer_on", "early"), [
    ("A", "A", False), ("A", "A", True), ("B", "A", False), ("B", "B", False), ("B", "A", True)],
    ids=["same-replica", "same-replica-waiting-before-the-ask", "result-on-B-answer-to-A",
         "result-on-B-answer-to-B", "result-on-B-waiting-before-the-ask"])
async def test_a_tasks_elicitation_goes_out_on_the_tasks_result_stream(
        replicas: tuple[UvicornProcess, UvicornProcess], http: httpx.AsyncClient, result_on: str,
        answer_on: str, early: bool) -> None:
    """The task runs on A; ``tasks/result`` is opened on ``result_on`` and carries the elicitation; the
    client's answer is POSTed to ``answer_on``; the stream then ends with the tool's result. ``early``:
    the ``tasks/result`` is already waiting when the task asks (it asks once ``finish`` is called)."""
    a, b = replicas
    by_name = {"A": a, "B": b}
    at_a = await initialize(http, a.url, capabilities={"elicitation": {}})
    reading, answering = on(at_a, by_name[result_on]), on(at_a, by_name[answer_on])
    name = unique("h-input")
    task_id = await _legacy_task(at_a, "confirm", name=name, after_finish=early)
    wait = request_body(reading.next_id(), "tasks/result", {"taskId": task_id})
    async with reading.stream_post(wait) as response:
        assert response.status_code == 200, await response.aread()
        reader = SSEReader(response)
        if early:
            priming = await reader.next()  # the tasks/result is under way, the task still working
            assert priming.data == "", priming
            assert (await on(at_a, b).call("tasks/get", {"taskId": task_id}))["status"] == "working"
            assert await at_a.tool("finish", name=name) == "ok"
        asked = await reader.message()
        assert asked["method"] == "elicitation/create", asked
        assert asked["params"]["_meta"][RELATED_TASK] == {"taskId": task_id}, asked
        assert asked["params"]["message"] == f"Go on with {name}?", asked
        assert asked["params"]["requestedSchema"] == CONFIRM_SCHEMA, asked
        for replica in (a, b):  # every replica tells the same state
            state = await on(at_a, replica).call("tasks/get", {"taskId": task_id})
            assert state["status"] == "input_required", state
        answer = {"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": {"ok": False}}}
        assert (await answering.post(answer)).status_code == 202
        done = await reader.message()
        rest = await reader.rest()
    assert done["id"] == wait["id"], done
    assert done["result"]["content"][0]["text"] == f"{name}: accept ok=False", done
    assert done["result"]["_meta"][RELATED_TASK] == {"taskId": task_id}, done
    assert [e.message for e in rest if e.message is not None] == [], rest
    assert (await on(at_a, b).call("tasks/get", {"taskId": task_id}))["status"] == "completed"


# -- the official client --------------------------------------------------------------------------------------
class TaskHandle(Result):
    """The extension's ``CreateTaskResult``, as the official client's result claim parses it."""

    result_type: Literal["task"] = "task"
    task_id: str
    status: str
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None


class DetailedTask(Result):
    """What the extension's ``tasks/get`` answers."""

    task_id: str
    status: str
    status_message: str | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


class GetTaskParams(RequestParams):
    task_id: str


class GetTask(Request[GetTaskParams, Literal["tasks/get"]]):
    """The extension's ``tasks/get``; the client mirrors ``taskId`` as ``Mcp-Name``."""

    method: Literal["tasks/get"] = "tasks/get"
    params: GetTaskParams
    name_param = "taskId"


class PollingTasks(ClientExtension):
    """The tasks extension through the official client's public extension API: declares it, claims the
    ``resultType: "task"`` answer of ``tools/call``, and resolves it by polling ``tasks/get``."""

    identifier = TASKS_EXTENSION

    def __init__(self) -> None:
        self.handles: list[TaskHandle] = []
        self.seen: list[DetailedTask] = []

    def claims(self) -> Sequence[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=TaskHandle, resolve=self.resolve)]

    async def resolve(self, handle: TaskHandle, ctx: ClaimContext) -> CallToolResult:
        self.handles.append(handle)
        deadline = time.monotonic() + READ_BOUND
        while True:
            state = await ctx.session.send_request(GetTask(params=GetTaskParams(task_id=handle.task_id)),
                                                   DetailedTask)
            self.seen.append(state)
            if state.status not in ACTIVE:
                break
            assert time.monotonic() < deadline, f"the task stayed {state.status}"
        assert state.status == "completed", state
        return CallToolResult.model_validate(state.result)


@pytest.fixture(scope="module")
def everything() -> Iterator[UvicornProcess]:
    with run_uvicorn("examples.everything:server") as server:
        yield server
        output = server.output()
    assert "Traceback" not in output, output


async def test_the_official_client_polls_a_task_through_its_extension_api(everything: UvicornProcess) -> None:
    tasks = PollingTasks()
    async with Client(streamable_http_client(everything.url), extensions=[tasks],
                      read_timeout_seconds=READ_BOUND) as client:
        assert client.protocol_version == "2026-07-28"
        result = await client.call_tool("slow_compute", {"seconds": 0.2, "label": "by the SDK"})
    assert not result.is_error, result
    assert [block.model_dump(exclude_none=True) for block in result.content] == [
        {"type": "text", "text": "Computed by the SDK in 0.2s."}]
    (handle,) = tasks.handles
    assert handle.status == "working", handle
    assert {state.task_id for state in tasks.seen} == {handle.task_id}
    assert [state.status for state in tasks.seen][-1] == "completed"
    assert all(state.status == "working" for state in tasks.seen[:-1]), tasks.seen
