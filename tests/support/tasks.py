"""What the task tests share: the behaviour checks every ``TaskStore`` must pass, written once (each takes
two stores over the same tasks, ``a`` and ``b``: two replicas; the in-memory store passes itself twice),
the task tools both eras' tests start from (``Gate``, ``task_server``), and a 2026-07-28 client of the
tasks extension (``connect``, ``start``, ``get``, ``update``, ``until``, ...). Nothing sleeps: the tests
wait on the server's change bus, bounded."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from wiremcp import Context, MCPServer
from wiremcp.errors import InvalidParams, MCPError, ToolError
from wiremcp.principal import Principal
from wiremcp.protocol import TASKS_EXTENSION
from wiremcp.tasks import TERMINAL, DuplicateTask, TaskRecord, TaskStore
from wiremcp.transports.memory import Client
from wiremcp.types import JSONObject

ALICE = "https://issuer.example|alice"
BOB = "https://issuer.example|bob"

VERSION = "2026-07-28"
EXT = "2026-07-28/extensions/tasks"
"""The spec page of the tasks extension, for ``pytest.mark.spec``."""
BOUND = 20.0
"""Failure bound for anything awaited on a task; nothing should come close, generous for loaded machines."""
OK_SCHEMA: JSONObject = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
YES: JSONObject = {"action": "accept", "content": {"ok": True}}
NO: JSONObject = {"action": "decline"}
MISSING_EXTENSION: JSONObject = {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}

Check = Callable[[TaskStore, TaskStore], Awaitable[None]]


class Gate:
    """Lets a test hold a handler (``release``) and see what it went through."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        self.cancelled = asyncio.Event()
        self.ended: list[str] = []


def task_server(gate: Gate) -> MCPServer:
    """``slow`` (held by the gate, cancellable), ``batch`` (must be a task), ``plain`` (never one) and
    ``broken`` (a tool error); and those the extension's input and start rules need: ``refused`` (a
    JSON-RPC error), ``confirm`` (asks once the gate opens), ``pair`` (asks twice at once), ``twice`` (asks
    twice in turn), ``impatient`` (asks with a timeout), and, starting their tasks themselves, ``staged``
    (asks before and inside its task), ``probe`` and ``quick`` (never starts one)."""
    server = MCPServer("tasks")

    @server.tool(task_support="optional")
    async def slow(text: str) -> str:
        gate.started.set()
        try:
            await gate.release.wait()
        except asyncio.CancelledError:
            gate.ended.append("cancelled")
            gate.cancelled.set()
            raise
        return text.upper()

    @server.tool(task_support="required")
    async def batch(n: int) -> int:
        return n * 2

    @server.tool()
    def plain(n: int) -> int:
        return n + 1

    @server.tool(task_support="optional")
    async def broken() -> str:
        raise ToolError("it broke")

    @server.tool(task_support="optional")
    async def refused() -> str:
        raise MCPError(-32001, "the backend refused")

    @server.tool(task_support="optional")
    async def confirm(ctx: Context) -> str:
        await gate.release.wait()
        answer = await ctx.elicit("Go ahead?", OK_SCHEMA)
        return f"{answer.action}: {(answer.content or {}).get('ok')}"

    @server.tool(task_support="optional")
    async def pair(ctx: Context) -> str:
        first, second = await asyncio.gather(ctx.elicit("First?", OK_SCHEMA),
                                             ctx.elicit("Second?", OK_SCHEMA))
        return f"{first.action} {second.action}"

    @server.tool(task_support="optional")
    async def twice(ctx: Context) -> str:
        first = await ctx.elicit("First?", OK_SCHEMA)
        second = await ctx.elicit("Second?", OK_SCHEMA)
        return f"{first.action} {second.action}"

    @server.tool(task_support="optional")
    async def impatient(ctx: Context) -> str:
        return (await ctx.elicit("Quick?", OK_SCHEMA, timeout=0.2)).action

    @server.tool(task_support="optional", task_start="handler")
    async def staged(ctx: Context) -> str:
        """Asks before the task (MRTR rounds on the call), starts it, then asks again inside it."""
        before = await ctx.elicit("Before?", OK_SCHEMA)
        await ctx.start_task()
        inside = await ctx.elicit("Inside?", OK_SCHEMA)
        return f"{before.action} then {inside.action}"

    @server.tool(task_support="optional", task_start="handler")
    async def probe(ctx: Context) -> str:
        await ctx.start_task()
        return f"task_id={ctx.task_id}"

    @server.tool(task_support="optional", task_start="handler")
    async def quick(ctx: Context) -> str:
        return f"no task: {ctx.task_id}"

    return server


# -- a client's tasks in the handshake era (2025-11-25) ----------------------------------------------------


async def create(client: Client, name: str, arguments: JSONObject, **task: Any) -> JSONObject:
    """Call ``name`` as a task (``params.task``): the ``Task`` of the ``CreateTaskResult``."""
    result = await client.request("tools/call", {"name": name, "arguments": arguments, "task": task})
    created: JSONObject = result["task"]
    return created


# -- a client of the tasks extension (2026-07-28) ------------------------------------------------------------


@contextlib.asynccontextmanager
async def connect(server: MCPServer, *, extension: bool = True, principal: str | None = None,
                  version: str = VERSION) -> AsyncIterator[Client]:
    """A client declaring elicitation (and the extension unless told not to), as ``principal``."""
    caps: JSONObject = {"elicitation": {}}
    if extension:
        caps["extensions"] = {TASKS_EXTENSION: {}}
    caller = Principal("https://issuer.test", principal) if principal is not None else None
    async with Client(server, protocol_version=version, capabilities=caps, principal=caller) as client:
        yield client


async def start(client: Client, name: str, arguments: JSONObject | None = None) -> JSONObject:
    result = await client.request("tools/call", {"name": name, "arguments": arguments or {}})
    assert result["resultType"] == "task", result
    return result


async def get(client: Client, task_id: str) -> JSONObject:
    return await client.request("tasks/get", {"taskId": task_id})


async def update(client: Client, task_id: str, responses: Any) -> JSONObject:
    return await client.request("tasks/update", {"taskId": task_id, "inputResponses": responses})


async def error(client: Client, method: str, params: JSONObject) -> JSONObject:
    response = await client.request_raw(method, client.with_meta(params))
    assert "error" in response, response
    found: JSONObject = response["error"]
    return found


async def until(client: Client, task_id: str, done: Callable[[JSONObject], bool]) -> JSONObject:
    """The task as ``tasks/get`` shows it once ``done`` holds, re-read at each change the server publishes."""
    with client.server.runtime.backend.bus.subscribe() as changes:
        events = aiter(changes)
        async with asyncio.timeout(BOUND):
            while not done(state := await get(client, task_id)):
                await anext(events)
    return state


def status(*wanted: str) -> Callable[[JSONObject], bool]:
    return lambda state: state["status"] in wanted


def asking(count: int) -> Callable[[JSONObject], bool]:
    return lambda state: state["status"] == "input_required" and len(state["inputRequests"]) == count


def bare(result: JSONObject) -> JSONObject:
    """A result less what every stateless result carries (to compare it with a notification's params)."""
    return {k: v for k, v in result.items() if k not in ("resultType", "_meta")}


def assert_ack(result: JSONObject) -> None:
    assert result["resultType"] == "complete"
    assert set(result) == {"resultType", "_meta"}, result


async def create_get_and_ownership(a: TaskStore, b: TaskStore) -> None:
    record = TaskRecord.new(ALICE, ttl_ms=60_000, poll_interval_ms=500, status_message="started",
                            owner_replica="r1")
    await a.create(record)
    assert await b.get(record.task_id, ALICE) == record  # durable at once, on the other replica too
    assert await b.get(record.task_id, BOB) is None  # someone else's task does not exist
    assert await b.get(record.task_id, None) is None
    assert await b.get("unknown", ALICE) is None
    with pytest.raises(DuplicateTask):
        await b.create(record)
    anonymous = TaskRecord.new(None)
    await b.create(anonymous)
    assert await a.get(anonymous.task_id, None) == anonymous
    assert await a.get(anonymous.task_id, ALICE) is None
    got = await a.get(record.task_id, ALICE)
    assert got is not None
    got.result = {"content": []}  # a copy: changing it changes nothing stored
    assert await a.get(record.task_id, ALICE) == record


async def list_pages_own_tasks_only(a: TaskStore, b: TaskStore) -> None:
    base = time.time()
    mine = [TaskRecord.new(ALICE, ttl_ms=60_000, now=base + i // 2) for i in range(7)]  # ties in time
    for i, record in enumerate(mine):
        await (a if i % 2 else b).create(record)
        await a.create(TaskRecord.new(BOB, ttl_ms=60_000, now=base + i))
    expected = sorted(mine, key=lambda r: (r.created_at, r.task_id))
    seen: list[TaskRecord] = []
    cursor: str | None = None
    pages = 0
    while True:
        page, cursor = await (b if pages % 2 else a).list(ALICE, cursor, limit=3)
        seen.extend(page)
        pages += 1
        if cursor is None:
            break
    assert seen == expected
    assert pages == 3
    everything, last = await a.list(ALICE, None, limit=7)
    assert list(everything) == expected
    assert last is None
    assert await a.list("nobody", None, limit=3) == ([], None)
    with pytest.raises(InvalidParams):
        await a.list(ALICE, "not a cursor!", limit=3)


async def transitions_and_terminal_finality(a: TaskStore, b: TaskStore) -> None:
    record = TaskRecord.new(ALICE, ttl_ms=60_000, now=time.time() - 5)
    await a.create(record)
    assert await b.transition(record.task_id, "completed", expect={"input_required"}) is None
    asking = await b.transition(record.task_id, "input_required", expect={"working"},
                                input_requests={"q1": {"method": "elicitation/create"}},
                                status_message="need input")
    assert asking is not None
    assert asking.status == "input_required"
    assert asking.input_requests == {"q1": {"method": "elicitation/create"}}
    assert asking.last_updated_at > record.last_updated_at
    assert asking.created_at == record.created_at
    assert await a.get(record.task_id, ALICE) == asking
    working = await a.transition(record.task_id, "working", expect={"input_required"}, input_requests={})
    assert working is not None
    done = await b.transition(record.task_id, "completed", expect={"working", "input_required"},
                              result={"content": [], "isError": False}, status_message="done")
    assert done is not None
    assert done.result == {"content": [], "isError": False}
    for status in ("working", "input_required", "completed", "failed", "cancelled"):
        assert await a.transition(record.task_id, status, expect=TERMINAL | {"working"}) is None
    assert await b.get(record.task_id, ALICE) == done
    assert await a.transition("unknown", "completed", expect={"working"}) is None
    with pytest.raises(TypeError):
        await a.transition(record.task_id, "completed", expect={"completed"}, principal=BOB)


async def concurrent_transitions_have_one_winner(a: TaskStore, b: TaskStore) -> None:
    record = TaskRecord.new(ALICE, ttl_ms=60_000)
    await a.create(record)
    outcomes = await asyncio.gather(*(
        (a if i % 2 else b).transition(
            record.task_id, "completed" if i % 3 else "cancelled", expect={"working"},
            result={"content": [{"type": "text", "text": str(i)}]}, status_message=str(i))
        for i in range(20)))
    winners = [o for o in outcomes if o is not None]
    assert len(winners) == 1
    stored = await b.get(record.task_id, ALICE)
    assert stored == winners[0]
    assert stored is not None
    assert stored.status == ("completed" if int(stored.status_message or "") % 3 else "cancelled")


async def cancel_requests(a: TaskStore, b: TaskStore) -> None:
    record = TaskRecord.new(ALICE, ttl_ms=60_000)
    await a.create(record)
    assert await b.request_cancel(record.task_id, BOB) is None
    assert await b.request_cancel("unknown", ALICE) is None
    flagged = await b.request_cancel(record.task_id, ALICE)
    assert flagged is not None
    assert flagged.cancel_requested
    assert flagged.status == "working"
    assert await b.request_cancel(record.task_id, ALICE) == flagged  # idempotent
    seen = await a.get(record.task_id, ALICE)
    assert seen is not None
    assert seen.cancel_requested  # the runner, on the other replica, sees the request
    cancelled = await a.transition(record.task_id, "cancelled", expect={"working", "input_required"})
    assert cancelled is not None
    assert cancelled.cancel_requested
    finished = TaskRecord.new(ALICE, ttl_ms=60_000)
    await a.create(finished)
    await a.transition(finished.task_id, "failed", expect={"working"}, error={"code": -32603, "message": "x"})
    terminal = await b.request_cancel(finished.task_id, ALICE)
    assert terminal is not None
    assert terminal.status == "failed"
    assert not terminal.cancel_requested  # terminal: nothing to cancel, the caller answers the error


CHECKS: list[Check] = [create_get_and_ownership, list_pages_own_tasks_only, transitions_and_terminal_finality,
                       concurrent_transitions_have_one_winner, cancel_requests]


# -- input requests and their answers (the 2026-07-28 extension's tasks/update) ---------------------------

QUESTION = {"method": "elicitation/create", "params": {"message": "Name?", "requestedSchema": {"type": "object"}}}
ROOTS = {"method": "roots/list"}
ACCEPT = {"action": "accept", "content": {"name": "Ada"}}
DECLINE = {"action": "decline"}


async def input_requests_accumulate_until_the_task_ends(a: TaskStore, b: TaskStore) -> None:
    record = TaskRecord.new(ALICE, ttl_ms=60_000, now=time.time() - 5)
    await a.create(record)
    first = await b.add_input_request(record.task_id, "elicitation-1", QUESTION)
    assert first is not None
    assert first.status == "input_required"
    assert first.input_requests == {"elicitation-1": QUESTION}
    assert first.last_updated_at > record.last_updated_at
    second = await a.add_input_request(record.task_id, "roots-2", ROOTS)  # merged with the first
    assert second is not None
    assert second.status == "input_required"
    assert second.input_requests == {"elicitation-1": QUESTION, "roots-2": ROOTS}
    assert await b.get(record.task_id, ALICE) == second
    assert await a.add_input_request("unknown", "k", QUESTION) is None
    done = await b.transition(record.task_id, "completed", expect={"input_required"}, result={"content": []})
    assert done is not None
    assert await a.add_input_request(record.task_id, "elicitation-3", QUESTION) is None  # ended: no more
    assert await b.get(record.task_id, ALICE) == done


async def answers_take_only_outstanding_requests(a: TaskStore, b: TaskStore) -> None:
    record = TaskRecord.new(ALICE, ttl_ms=60_000)
    await a.create(record)
    await a.add_input_request(record.task_id, "k1", QUESTION)
    asking = await b.add_input_request(record.task_id, "k2", ROOTS)
    assert asking is not None
    assert await b.answer_inputs(record.task_id, BOB, {"k1": ACCEPT}) is None  # someone else's task
    assert await b.answer_inputs(record.task_id, None, {"k1": ACCEPT}) is None
    assert await a.answer_inputs("unknown", ALICE, {"k1": ACCEPT}) is None
    assert await a.answer_inputs(record.task_id, ALICE, {"never-asked": ACCEPT}) == (asking, ())  # nothing written
    assert await b.get(record.task_id, ALICE) == asking

    outcome = await b.answer_inputs(record.task_id, ALICE, {"k1": ACCEPT, "never-asked": DECLINE})
    assert outcome is not None
    partial, taken = outcome
    assert taken == ("k1",)
    assert partial.status == "input_required"  # k2 is still outstanding
    assert partial.input_requests == {"k2": ROOTS}
    assert partial.input_responses == {"k1": ACCEPT}
    assert await a.get(record.task_id, ALICE) == partial
    assert await a.answer_inputs(record.task_id, ALICE, {"k1": DECLINE}) == (partial, ())  # already answered

    outcome = await a.answer_inputs(record.task_id, ALICE, {"k2": {"roots": []}})
    assert outcome is not None
    answered, taken = outcome
    assert taken == ("k2",)
    assert answered.status == "working"  # the last answer: the task works again
    assert answered.input_requests == {}
    assert answered.input_responses == {"k1": ACCEPT, "k2": {"roots": []}}
    assert await b.get(record.task_id, ALICE) == answered


async def answers_to_an_ended_task_are_ignored(a: TaskStore, b: TaskStore) -> None:
    record = TaskRecord.new(ALICE, ttl_ms=60_000)
    await a.create(record)
    await a.add_input_request(record.task_id, "k1", QUESTION)
    cancelled = await b.transition(record.task_id, "cancelled", expect={"input_required"})  # k1 left in place
    assert cancelled is not None
    assert cancelled.input_requests == {"k1": QUESTION}
    assert await a.answer_inputs(record.task_id, ALICE, {"k1": ACCEPT}) == (cancelled, ())
    assert await b.get(record.task_id, ALICE) == cancelled


async def concurrent_requests_and_answers_lose_nothing(a: TaskStore, b: TaskStore) -> None:
    record = TaskRecord.new(ALICE, ttl_ms=60_000)
    await a.create(record)
    first = [f"first-{i}" for i in range(12)]
    added = await asyncio.gather(*((a if i % 2 else b).add_input_request(record.task_id, key, {**ROOTS, "i": i})
                                   for i, key in enumerate(first)))
    assert all(r is not None for r in added)
    stored = await a.get(record.task_id, ALICE)
    assert stored is not None
    assert set(stored.input_requests) == set(first)

    # answering the first batch while a second batch of requests is added, from both replicas
    second = [f"second-{i}" for i in range(12)]
    outcomes = await asyncio.gather(
        *((b if i % 2 else a).answer_inputs(record.task_id, ALICE, {key: {"i": i}}) for i, key in enumerate(first)),
        *((a if i % 2 else b).add_input_request(record.task_id, key, QUESTION) for i, key in enumerate(second)))
    taken = [key for outcome in outcomes[:len(first)] if isinstance(outcome, tuple) for key in outcome[1]]
    assert sorted(taken) == sorted(first)
    assert all(outcome is not None for outcome in outcomes)
    stored = await b.get(record.task_id, ALICE)
    assert stored is not None
    assert stored.status == "input_required"
    assert set(stored.input_requests) == set(second)
    assert stored.input_responses == {key: {"i": i} for i, key in enumerate(first)}

    # several answers to the same request: exactly one is taken
    racing = await asyncio.gather(*((a if i % 2 else b).answer_inputs(record.task_id, ALICE, {"second-0": {"i": i}})
                                    for i in range(10)))
    winners = [outcome for outcome in racing if outcome is not None and outcome[1] == ("second-0",)]
    assert len(winners) == 1
    stored = await a.get(record.task_id, ALICE)
    assert stored is not None
    assert "second-0" not in stored.input_requests
    assert stored.input_responses["second-0"] == winners[0][0].input_responses["second-0"]


INPUT_CHECKS: list[Check] = [input_requests_accumulate_until_the_task_ends, answers_take_only_outstanding_requests,
                             answers_to_an_ended_task_are_ignored, concurrent_requests_and_answers_lose_nothing]
"""The store side of input during a task: ``add_input_request`` and ``answer_inputs``."""
