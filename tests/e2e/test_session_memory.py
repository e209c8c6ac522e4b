"""A real ``uvicorn app:asgi`` whose sessions end a few at a time gives their memory back once enough of them
have gone (``SessionManager._give_back``, ``FallFromPeak``: a quarter of the peak and at least 256 sessions),
though no sweep ends many. Observed from outside, in the server's log (a line per sweep that ended sessions,
a line per release), never in resident memory.

Every session holds a GET stream open, so it cannot expire (it is busy), however slow this machine is; the
client closes the streams a group at a time and waits, on the log, until that group has expired before
closing the next one: the sessions end a group per sweep (or two), whatever the timing.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator

import httpx
import pytest

from tests.support.cluster import until
from tests.support.http import READ_BOUND, RawSession, UvicornProcess, initialize, run_uvicorn
from tests.support.settings_server import SETTINGS_SERVER
from wiremcp.transports.allocator import FallFromPeak

pytestmark = pytest.mark.timeout(120)

FLOOR = FallFromPeak().floor
"""256: the release is due once this many (more than a quarter of the peak here) have gone."""
GROUP = FLOOR // 4
"""Sessions whose streams are closed together: the release is due once 4 groups have gone, not before."""
SESSIONS = 5 * GROUP
EXPIRED = re.compile(r"expired (\d+) idle sessions")
RELEASED = re.compile(r"gave back the memory of ended sessions: (\d+) live, (\d+) at most since the last time")


def expired(server: UvicornProcess) -> list[int]:
    """How many sessions each sweep that ended some ended, in order."""
    return [int(count) for count in EXPIRED.findall(server.output())]


def releases(server: UvicornProcess) -> list[tuple[int, int]]:
    """(sessions live, the most since the last release) at each release."""
    return [(int(live), int(peak)) for live, peak in RELEASED.findall(server.output())]


async def until_expired(server: UvicornProcess, count: int) -> None:
    """Wait (bounded) until the server's sweeps have ended ``count`` sessions in all."""
    await until(lambda: sum(expired(server)) >= count, timeout=READ_BOUND + 5,
                what=lambda: f"{count} sessions to expire (ended by each sweep so far: {expired(server)})")


@contextlib.asynccontextmanager
async def streaming(session: RawSession) -> AsyncIterator[None]:
    """The session's GET stream, open (its headers read) until the block ends."""
    async with session.stream_get() as response:
        assert response.status_code == 200, response.status_code
        yield


async def test_sessions_ending_a_few_per_sweep_are_given_back_once_enough_have_gone() -> None:
    env = {"WIREMCP_SESSION_IDLE_SECONDS": "1", "WIREMCP_LOG_LEVEL": "INFO"}
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    with run_uvicorn(SETTINGS_SERVER, env) as server:
        async with httpx.AsyncClient(timeout=READ_BOUND, limits=limits) as http:
            sessions: list[RawSession] = []
            groups = [contextlib.AsyncExitStack() for _ in range(SESSIONS // GROUP)]
            try:
                for n in range(SESSIONS):  # each busy from its first moments: none may expire yet
                    sessions.append(await initialize(http, server.url))
                    await groups[n // GROUP].enter_async_context(streaming(sessions[-1]))
                for n, group in enumerate(groups, 1):
                    await group.aclose()  # this group's sessions are idle from now on
                    await until_expired(server, n * GROUP)
                    if n * GROUP < FLOOR:
                        assert releases(server) == [], server.output()
            finally:
                for group in groups:
                    await group.aclose()
            assert sum(expired(server)) == SESSIONS
            assert max(expired(server)) <= GROUP  # a few per sweep, never the lot
            assert (await sessions[0].request("ping")).status_code == 404
        # Due once 256 of the 320 had gone (64 live), not before; then the last 64 are fewer than the floor.
        assert releases(server) == [(SESSIONS - FLOOR, SESSIONS)], server.output()
