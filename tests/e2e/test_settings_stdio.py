"""The settings of the ``wiremcp stdio`` command, each observed on a real process (``wiremcp stdio SPEC`` from the
repository root, ``tests.support.stdio``), each test failing where its setting would be left at its default:

- ``WIREMCP_MAX_MESSAGE_BYTES``: a line over the limit (far under the default 4 MiB) is answered with an
  Invalid Request error (id null), and the process keeps serving;
- ``WIREMCP_STDIO_DRAIN_SECONDS``: a call that takes a second, running when stdin closes, still writes its
  answer before the process exits (the default drain, 0.3 s, cuts it off: its answer is the shutdown's
  retryable error); a call that never ends is answered with that error once the drain is up, and the
  process exits;
- ``WIREMCP_LOG_FORMAT`` and ``WIREMCP_LOG_LEVEL``: every stderr line is a JSON object, and a DEBUG record is
  among them (the framework's note of a response to a request it never sent).

Nothing sleeps to wait for something: every read has a failure bound (``tests.support.stdio.READ_BOUND``).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support.settings_server import SETTINGS_SERVER
from tests.support.stdio import EXIT_BOUND, Spawn, parse_wire_line, spawn  # noqa: F401 - spawn: the fixture of the stdio tests
from wiremcp.shutdown import CUT_OFF

pytestmark = pytest.mark.timeout(60)

LIMIT = 1024
"""``WIREMCP_MAX_MESSAGE_BYTES`` here: 4096 times smaller than the default."""
PAUSE = 1.0
"""How long the call in flight at stdin EOF takes: longer than the default drain (0.3 s), far shorter than the
configured one (``DRAIN``)."""
DRAIN = 30.0
HUNG_DRAIN = 2.0
"""The drain a hung call outlasts: four times ``SHORT``, far shorter than the failure bounds of the reads."""
SHORT = 0.5


def _text(response: dict[str, Any]) -> str:
    assert "result" in response, response
    assert not response["result"].get("isError"), response
    return str(response["result"]["content"][0]["text"])


@pytest.mark.setting("WIREMCP_MAX_MESSAGE_BYTES")
async def test_a_line_longer_than_max_message_bytes_is_refused_and_the_process_keeps_serving(
        spawn: Spawn) -> None:  # noqa: F811 - the fixture
    server = await spawn(SETTINGS_SERVER, env={"WIREMCP_MAX_MESSAGE_BYTES": str(LIMIT)})
    await server.initialize()
    await server.call_tool(1, "echo", {"text": "x" * (2 * LIMIT)})  # a 2 KiB line: nothing under the default
    refused = await server.recv()
    assert isinstance(refused, dict), refused
    rid = refused.get("id", "missing")
    assert rid is None, f"expected the too-long line's error (id null), got an answer to {rid!r}: {str(refused)[:120]}"
    assert refused["error"]["code"] == -32600, refused
    assert str(LIMIT) in refused["error"]["message"], refused
    # the same process serves the next line, one under the limit
    await server.call_tool(2, "echo", {"text": "y" * (LIMIT // 2)})
    assert _text(await server.response(2)) == "y" * (LIMIT // 2)


@pytest.mark.setting("WIREMCP_STDIO_DRAIN_SECONDS")
async def test_a_call_in_flight_at_stdin_eof_is_answered_within_the_stdio_drain(
        spawn: Spawn) -> None:  # noqa: F811 - the fixture
    server = await spawn(SETTINGS_SERVER, env={"WIREMCP_STDIO_DRAIN_SECONDS": str(DRAIN)})
    await server.initialize()
    await server.call_tool(1, "pause", {"seconds": PAUSE})
    started = await server.notification("notifications/message")  # it is running
    assert started["params"]["data"] == "pause: started", started
    await server.close_stdin()
    assert _text(await server.response(1)) == f"paused {PAUSE}s"
    assert await server.stdout_to_eof() == []
    assert await server.wait_exit() == 0


@pytest.mark.setting("WIREMCP_STDIO_DRAIN_SECONDS")
async def test_a_hung_call_at_stdin_eof_is_answered_retryably_once_the_stdio_drain_is_up(
        spawn: Spawn) -> None:  # noqa: F811 - the fixture
    """A call that finishes within the drain is answered with its result; one that never would is answered
    with the shutdown's retryable error once the drain is up, and the process exits (``EXIT_BOUND``: a
    failure bound, not a measurement)."""
    server = await spawn(SETTINGS_SERVER, env={"WIREMCP_STDIO_DRAIN_SECONDS": str(HUNG_DRAIN)})
    await server.initialize()
    await server.call_tool(1, "pause", {"seconds": 3600})
    started = await server.notification("notifications/message")  # it is running
    assert started["params"]["data"] == "pause: started", started
    await server.call_tool(2, "nap", {"seconds": SHORT})
    await server.close_stdin()  # both lines are read before the EOF: both calls are running at it
    assert _text(await server.response(2)) == "rested"
    assert await server.response(1) == {"jsonrpc": "2.0", "id": 1, "error": {
        "code": -32603, "message": CUT_OFF, "data": {"replica": None, "retryable": True}}}
    assert await server.stdout_to_eof() == []
    assert await server.wait_exit(EXIT_BOUND) == 0
    assert "Traceback" not in await server.stderr_to_eof()


@pytest.mark.setting("WIREMCP_LOG_FORMAT", "WIREMCP_LOG_LEVEL")
async def test_stdio_logs_are_json_lines_at_the_configured_level(
        spawn: Spawn) -> None:  # noqa: F811 - the fixture
    server = await spawn(SETTINGS_SERVER, env={"WIREMCP_LOG_FORMAT": "json", "WIREMCP_LOG_LEVEL": "DEBUG"})
    await server.initialize()
    await server.send({"jsonrpc": "2.0", "id": "never-sent", "result": {}})  # logged at DEBUG, and dropped
    await server.request(2, "ping")
    assert await server.response(2) == {"jsonrpc": "2.0", "id": 2, "result": {}}
    await server.close_stdin()
    assert [parse_wire_line(line) for line in await server.stdout_to_eof()] == []
    assert await server.wait_exit() == 0
    records = []
    for line in (await server.stderr_to_eof()).splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            pytest.fail(f"a stderr line that is not JSON: {line!r}")
        assert isinstance(record, dict), line
        assert {"time", "level", "logger", "message"} <= record.keys(), record
        records.append(record)
    debug = [r for r in records if r["level"] == "DEBUG"]
    assert any("never-sent" in r["message"] for r in debug), f"no DEBUG record of the dropped response: {records}"
