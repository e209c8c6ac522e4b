"""Every setting, proved on a real ``uvicorn app:asgi``: each test sets variables in the
process's environment and observes their effect from outside, where the default value would give
another answer (so a setting that stopped reaching the server fails its test). A test says which
settings it proves with ``@pytest.mark.setting(...)``; the first test here checks that every variable of
``Settings`` (the settings reference of the documentation is generated from them) has such a test somewhere
in the suite, and that ``settings.py`` reads exactly those variables.

Here: the HTTP guards and endpoints, streams, ``requestState``, logs, the session cap and idle expiry,
the replay buffer's bounds and the task settings. Elsewhere: Redis and replicas
(``test_settings_redis.py``), stdio (``test_settings_stdio.py``), authorization (``test_settings_auth.py``,
``test_auth.py``), the drain (``test_task_replicas.py``).
"""

from __future__ import annotations

import ast
import asyncio
import base64
import json
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.cluster import until
from tests.support.http import (
    LATEST,
    READ_BOUND,
    RawSession,
    SSEReader,
    UvicornProcess,
    error_of,
    initialize,
    post_headers,
    request_body,
    run_uvicorn,
)
from tests.support.settings_server import SETTINGS_SERVER
from tests.support.stateless_http import Call, post, result_of, with_meta
from wiremcp.protocol import TASKS_EXTENSION
from wiremcp.request_state import RequestStateRejected, RequestStateSealer, decode_key
from wiremcp.transports.serving.settings import SETTING_NAMES

pytestmark = pytest.mark.timeout(60)

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
POLL = 0.05
"""The interval of a bounded poll of an effect that comes with time (an expiry)."""


# -- the settings, and the tests that prove them ---------------------------------------------------------------
def read_by_settings_py() -> set[str]:
    """The variables ``Settings.from_env`` reads; they must be the settings ``SETTING_NAMES`` knows (the fields
    of ``Settings``), so that no variable it reads is ever reported as unknown."""
    source = (ROOT / "transports" / "serving" / "settings.py").read_text()
    tree = ast.parse(source)
    from_env = next(node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) and node.name == "from_env")
    read = {node.value for node in ast.walk(from_env) if isinstance(node, ast.Constant)
            and isinstance(node.value, str) and node.value.startswith("WIREMCP_")}
    assert read == SETTING_NAMES, (sorted(read - SETTING_NAMES), sorted(SETTING_NAMES - read))
    return read


def proved_settings() -> dict[str, list[str]]:
    """``@pytest.mark.setting("WIREMCP_X", ...)`` across the suite: setting -> the tests marked with it."""
    proved: dict[str, list[str]] = {}
    for path in sorted(TESTS.rglob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for decorator in node.decorator_list:
                if (isinstance(decorator, ast.Call) and isinstance(decorator.func, ast.Attribute)
                        and decorator.func.attr == "setting"):
                    for arg in decorator.args:
                        assert isinstance(arg, ast.Constant), (path, node.name)
                        assert isinstance(arg.value, str), (path, node.name)
                        proved.setdefault(arg.value, []).append(f"{path.relative_to(ROOT)}::{node.name}")
    return proved


def test_every_setting_is_proved_on_a_real_server() -> None:
    """Every field of ``Settings`` (each a row of the settings reference, which the documentation site generates
    from them) has a test that proves it on a real process."""
    listed = read_by_settings_py()
    assert len(listed) >= 40, sorted(listed)
    proved = proved_settings()
    assert not listed - set(proved), f"no test proves: {sorted(listed - set(proved))}"
    assert not set(proved) - listed, f"marked but not a setting: {sorted(set(proved) - listed)}"


# -- helpers --------------------------------------------------------------------------------------------------
def url_of(process: UvicornProcess, path: str = "/mcp") -> str:
    return process.base_url + path


async def until_initialized(http: httpx.AsyncClient, url: str, bound: float = 3 * READ_BOUND) -> RawSession:
    """``initialize`` until it is accepted (a session of an earlier test may hold the one place a while)."""
    deadline = time.monotonic() + bound
    while True:
        params = {"protocolVersion": LATEST, "capabilities": {}, "clientInfo": {"name": "settings", "version": "0"}}
        response = await http.post(url, content=json.dumps(request_body(1, "initialize", params)),
                                   headers=post_headers())
        if response.status_code == 200:
            session = RawSession(http, url, response.headers["mcp-session-id"], LATEST)
            assert (await session.notify("notifications/initialized")).status_code == 202
            return session
        assert response.status_code == 503, (response.status_code, response.text)
        assert time.monotonic() < deadline, f"no session within {bound}s: {response.text}"
        await asyncio.sleep(POLL)


# -- HTTP guards, endpoints, streams, requestState, logs: one process ------------------------------------------
KEY = base64.urlsafe_b64encode(bytes(range(32))).decode()
PUBLIC_HOST = "mcp.example.test"
APP_ORIGIN = "https://app.example.test"
GUARDED = {
    "WIREMCP_PATH": "/tools/mcp",
    "WIREMCP_ALLOWED_HOSTS": f"{PUBLIC_HOST}:*",
    "WIREMCP_ALLOWED_ORIGINS": APP_ORIGIN,
    "WIREMCP_MAX_MESSAGE_BYTES": "3000",
    "WIREMCP_LEGACY_SSE": "false",
    "WIREMCP_METRICS": "false",
    "WIREMCP_SSE_AFTER_SECONDS": "30",
    "WIREMCP_SSE_RETRY_MS": "4321",
    "WIREMCP_SSE_KEEPALIVE_SECONDS": "0.2",
    "WIREMCP_REQUEST_STATE_KEYS": KEY,
    "WIREMCP_REQUEST_STATE_TTL_SECONDS": "1234",
    "WIREMCP_LOG_LEVEL": "DEBUG",
    "WIREMCP_LOG_FORMAT": "json",
}


@pytest.fixture(scope="module")
def guarded() -> Iterator[UvicornProcess]:
    with run_uvicorn(SETTINGS_SERVER, GUARDED) as process:
        yield process


@pytest.fixture
async def public(guarded: UvicornProcess) -> AsyncIterator[httpx.AsyncClient]:
    """A client naming the public host, as a browser or host behind the proxy would."""
    async with httpx.AsyncClient(timeout=READ_BOUND, headers={"host": f"{PUBLIC_HOST}:{guarded.port}"}) as http:
        yield http


@pytest.mark.setting("WIREMCP_SERVER", "WIREMCP_PATH")
async def test_the_named_server_is_served_at_the_configured_path(guarded: UvicornProcess,
                                                                  public: httpx.AsyncClient) -> None:
    session = await initialize(public, url_of(guarded, "/tools/mcp"))
    tools = {tool["name"] for tool in (await session.call("tools/list"))["tools"]}
    assert tools == {"echo", "pause", "nap", "say", "ask"}  # tests.support.settings_server, not the demo
    moved = await public.post(url_of(guarded, "/mcp"), content=json.dumps(request_body(1, "ping")),
                              headers=post_headers())
    assert moved.status_code == 404


@pytest.mark.setting("WIREMCP_ALLOWED_HOSTS")
async def test_only_the_configured_hosts_are_served(guarded: UvicornProcess, public: httpx.AsyncClient) -> None:
    await initialize(public, url_of(guarded, "/tools/mcp"))
    async with httpx.AsyncClient(timeout=READ_BOUND) as loopback:  # Host: 127.0.0.1:port, served by default
        refused = await loopback.post(url_of(guarded, "/tools/mcp"), headers=post_headers(),
                                      content=json.dumps(request_body(1, "ping")))
    assert refused.status_code == 421, refused.text


@pytest.mark.setting("WIREMCP_ALLOWED_ORIGINS")
async def test_only_the_configured_origins_are_served(guarded: UvicornProcess, public: httpx.AsyncClient) -> None:
    url = url_of(guarded, "/tools/mcp")
    body = json.dumps(request_body(1, "initialize", {"protocolVersion": LATEST, "capabilities": {},
                                                     "clientInfo": {"name": "o", "version": "0"}}))
    allowed = await public.post(url, content=body, headers=post_headers(origin=APP_ORIGIN))
    assert allowed.status_code == 200, allowed.text  # not one of the hosts: refused by default
    # By default the allowed hosts' own origins are accepted; configured, only the listed ones.
    own = await public.post(url, content=body, headers=post_headers(origin=f"http://{PUBLIC_HOST}:{guarded.port}"))
    assert own.status_code == 403, own.text


@pytest.mark.setting("WIREMCP_MAX_MESSAGE_BYTES")
async def test_a_body_over_the_configured_size_is_413(guarded: UvicornProcess, public: httpx.AsyncClient) -> None:
    session = await initialize(public, url_of(guarded, "/tools/mcp"))
    small = request_body(session.next_id(), "tools/call", {"name": "nap", "arguments": {"seconds": 0}})
    assert (await session.post(small)).status_code == 200
    big = request_body(session.next_id(), "ping", {"_meta": {"padding": "x" * 4000}})  # 4 KB: far below the default
    refused = await session.post(big)
    assert refused.status_code == 413, refused.text
    assert (await session.post(small)).status_code == 200  # and the session goes on


@pytest.mark.setting("WIREMCP_LEGACY_SSE", "WIREMCP_METRICS")
async def test_the_legacy_transport_and_the_metrics_are_off(guarded: UvicornProcess,
                                                             public: httpx.AsyncClient) -> None:
    legacy = await public.get(guarded.base_url + "/sse", headers={"accept": "text/event-stream"})
    assert legacy.status_code == 404
    metrics = await public.get(guarded.base_url + "/metrics")
    assert metrics.status_code == 404
    assert (await public.get(guarded.base_url + "/healthz")).status_code == 200  # the rest is there


@pytest.mark.setting("WIREMCP_SSE_AFTER_SECONDS")
async def test_a_call_shorter_than_the_configured_delay_is_answered_as_json(guarded: UvicornProcess,
                                                                             public: httpx.AsyncClient) -> None:
    """The call runs 0.8 s: past the default 0.5 s it would be streamed (SSE); configured to 30 s, it is not."""
    session = await initialize(public, url_of(guarded, "/tools/mcp"))
    response = await session.request("tools/call", {"name": "nap", "arguments": {"seconds": 0.8}})
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.json()["result"]["content"][0]["text"] == "rested"


@pytest.mark.setting("WIREMCP_SSE_RETRY_MS", "WIREMCP_SSE_KEEPALIVE_SECONDS")
async def test_the_get_stream_primes_with_the_configured_retry_and_keeps_alive_at_the_configured_pace(
        guarded: UvicornProcess, public: httpx.AsyncClient) -> None:
    """The priming event carries ``retry: 4321``; a keep-alive comment comes well before the default 15 s."""
    session = await initialize(public, url_of(guarded, "/tools/mcp"))
    async with session.stream_get() as response:
        assert response.status_code == 200
        lines = response.aiter_lines()
        priming: list[str] = []
        async with asyncio.timeout(READ_BOUND):
            while (line := await anext(lines)) != "":
                priming.append(line)
            assert "retry: 4321" in priming, priming
            while not (line := await anext(lines)).startswith(":"):
                assert line == "", line  # nothing but the comment: the session is quiet
    assert (await session.delete()).status_code == 200


@pytest.mark.setting("WIREMCP_REQUEST_STATE_KEYS", "WIREMCP_REQUEST_STATE_TTL_SECONDS")
async def test_request_state_is_sealed_with_the_configured_key_for_the_configured_time(
        guarded: UvicornProcess, public: httpx.AsyncClient) -> None:
    """A stateless-era call asking for input answers with a ``requestState``: it opens with the configured
    key (by default each process seals with a random one), and it expires 1234 s after it was issued (by
    default 600 s): valid at 1200 s, expired at 1300 s."""
    params = {"name": "ask", "arguments": {"question": "Colour?"}}
    call = Call("tools/call", with_meta(params, capabilities={"elicitation": {}}), {"Mcp-Name": "ask"})
    issued = time.time()
    answer = result_of(await post(public, url_of(guarded, "/tools/mcp"), call), call.rid)
    assert answer["resultType"] == "input_required", answer
    token = answer["requestState"]

    def opened_at(moment: float) -> None:
        sealer = RequestStateSealer([decode_key(KEY)], clock=lambda: moment)
        sealer.open(token, owner="", method="tools/call", params=params)

    opened_at(issued + 1200)
    with pytest.raises(RequestStateRejected, match="expired"):
        opened_at(time.time() + 1300)


@pytest.mark.setting("WIREMCP_LOG_LEVEL", "WIREMCP_LOG_FORMAT")
async def test_the_framework_logs_json_lines_at_the_configured_level(guarded: UvicornProcess,
                                                                     public: httpx.AsyncClient) -> None:
    """An answer to a request the server never sent is dropped with a DEBUG record (below the default INFO)."""
    session = await initialize(public, url_of(guarded, "/tools/mcp"))
    assert (await session.post({"jsonrpc": "2.0", "id": "never-sent", "result": {}})).status_code == 202
    await session.call("ping")  # handled after the answer above: its record is written by now
    lines = [line for line in guarded.output().splitlines() if line.strip()]
    records = [json.loads(line) for line in lines if line.startswith("{")]
    assert any(r["level"] == "DEBUG" and "never-sent" in r["message"] for r in records), lines[-20:]
    text = [line for line in lines if not line.startswith("{") and " wiremcp" in line]
    assert not text, text  # no record of the framework's in the text format


# -- the session cap and idle expiry, and JSON answers: one process ------------------------------------------
@pytest.fixture(scope="module")
def capped() -> Iterator[UvicornProcess]:
    env = {"WIREMCP_MAX_SESSIONS": "1", "WIREMCP_SESSION_IDLE_SECONDS": "1", "WIREMCP_JSON_RESPONSE": "true"}
    with run_uvicorn(SETTINGS_SERVER, env) as process:
        yield process


@pytest.mark.setting("WIREMCP_JSON_RESPONSE")
async def test_a_call_sending_notifications_is_still_answered_as_json(capped: UvicornProcess,
                                                                      http: httpx.AsyncClient) -> None:
    """By default a call that logs is answered with an SSE stream carrying the logs, then the result."""
    session = await until_initialized(http, capped.url)
    response = await session.request("tools/call", {"name": "say", "arguments": {"count": 2, "size": 8}})
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.json()["result"]["content"][0]["text"] == "said 2"
    assert (await session.delete()).status_code == 200


@pytest.mark.setting("WIREMCP_MAX_SESSIONS")
async def test_sessions_past_the_configured_cap_are_503(capped: UvicornProcess, http: httpx.AsyncClient) -> None:
    """The one session holds its GET stream open (busy: it cannot expire, however slow this machine is)."""
    session = await until_initialized(http, capped.url)
    async with session.stream_get() as stream:
        assert stream.status_code == 200
        refused = await http.post(capped.url, headers=post_headers(), content=json.dumps(request_body(
            1, "initialize", {"protocolVersion": LATEST, "capabilities": {}, "clientInfo": {"name": "b", "version": "0"}})))
        assert refused.status_code == 503, refused.text
        assert error_of(refused)[0] == -32603
        assert (await session.request("ping")).status_code == 200  # the one session is served
    assert (await session.delete()).status_code == 200
    await until_initialized(http, capped.url, bound=READ_BOUND)  # its place is free again at once


@pytest.mark.setting("WIREMCP_SESSION_IDLE_SECONDS")
async def test_a_session_idle_for_the_configured_time_ends(capped: UvicornProcess, http: httpx.AsyncClient) -> None:
    """The one session idles; the next ``initialize`` is refused until it has been idle a second (by
    default half an hour), then it ends and the new one takes its place."""
    idle = await until_initialized(http, capped.url)
    await until_initialized(http, capped.url)
    gone = await idle.request("ping")
    assert gone.status_code == 404, gone.text


# -- the replay buffer's bounds ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def bounded() -> Iterator[UvicornProcess]:
    env = {"WIREMCP_EVENT_STORE_MAX_EVENTS": "5", "WIREMCP_EVENT_STORE_MAX_BYTES": "4000"}
    with run_uvicorn(SETTINGS_SERVER, env) as process:
        yield process


async def streamed_call(session: RawSession, count: int, size: int) -> str:
    """``say`` answered on an SSE stream; the id of its first event (the priming one)."""
    call = request_body(session.next_id(), "tools/call", {"name": "say", "arguments": {"count": count, "size": size}})
    async with session.stream_post(call) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        events = await SSEReader(response).rest()
    assert events[0].id is not None, events
    assert events[-1].message["result"]["content"][0]["text"] == f"said {count}", events
    return events[0].id


@pytest.mark.setting("WIREMCP_EVENT_STORE_MAX_EVENTS")
async def test_events_past_the_configured_count_are_no_longer_replayed(bounded: UvicornProcess,
                                                                        http: httpx.AsyncClient) -> None:
    """Ten events of ~170 bytes (below the byte bound): only the last five are kept."""
    session = await initialize(http, bounded.url)
    first = await streamed_call(session, 8, 10)
    resumed = await session.get(first)
    assert resumed.status_code == 400, resumed.text


@pytest.mark.setting("WIREMCP_EVENT_STORE_MAX_BYTES")
async def test_events_past_the_configured_bytes_are_no_longer_replayed(bounded: UvicornProcess,
                                                                        http: httpx.AsyncClient) -> None:
    """Five events (within the count bound), three of them of 1.5 KB: over 4,000 bytes, the oldest go."""
    session = await initialize(http, bounded.url)
    first = await streamed_call(session, 3, 1500)
    resumed = await session.get(first)
    assert resumed.status_code == 400, resumed.text


@pytest.mark.setting("WIREMCP_EVENT_STORE_MAX_AGE_SECONDS")
async def test_events_older_than_the_configured_age_are_no_longer_replayed(http: httpx.AsyncClient) -> None:
    with run_uvicorn(SETTINGS_SERVER, {"WIREMCP_EVENT_STORE_MAX_AGE_SECONDS": "0.5"}) as process:
        session = await initialize(http, process.url)
        first = await streamed_call(session, 2, 10)
        answers: list[httpx.Response] = []

        async def no_longer_replayed() -> bool:  # replayed (200) while young
            answers.append(await session.get(first))
            return answers[-1].status_code != 200

        await until(no_longer_replayed, READ_BOUND, "a replay refused once the events are older than 0.5 s")
        assert answers[-1].status_code == 400, answers[-1].text


# -- tasks -----------------------------------------------------------------------------------------------------
@pytest.mark.setting("WIREMCP_TASK_TTL_SECONDS", "WIREMCP_TASK_POLL_INTERVAL_MS", "WIREMCP_MAX_TASKS_PER_OWNER")
@pytest.mark.spec("2026-07-28/extensions/tasks#task-creation")
async def test_tasks_carry_the_configured_ttl_and_poll_interval_and_one_owner_runs_the_configured_number(
        http: httpx.AsyncClient) -> None:
    env = {"WIREMCP_TASK_TTL_SECONDS": "123", "WIREMCP_TASK_POLL_INTERVAL_MS": "250",
           "WIREMCP_MAX_TASKS_PER_OWNER": "1"}
    with run_uvicorn("tests.support.task_server:server", env) as process:
        created = await stateless_call(http, process, "job", name="first")
        assert created["resultType"] == "task", created
        assert (created["ttlMs"], created["pollIntervalMs"]) == (123_000, 250), created
        second = stateless_tool("job", name="second")
        refused = await post(http, process.url, second)
        assert error_of(refused) == (-32603, second.rid), refused.text
        assert refused.json()["error"]["data"]["retryable"] is True, refused.text
        assert (await stateless_call(http, process, "finish", name="first"))["resultType"] == "complete"


def stateless_tool(tool: str, **arguments: Any) -> Call:
    """A 2026-07-28 ``tools/call`` declaring the tasks extension."""
    params = {"name": tool, "arguments": arguments}
    return Call("tools/call", with_meta(params, capabilities={"extensions": {TASKS_EXTENSION: {}}}), {"Mcp-Name": tool})


async def stateless_call(http: httpx.AsyncClient, process: UvicornProcess, tool: str, **arguments: Any) -> Any:
    call = stateless_tool(tool, **arguments)
    return result_of(await post(http, process.url, call), call.rid)
