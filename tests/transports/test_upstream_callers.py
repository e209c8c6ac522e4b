"""A remote child called with the caller's own token (``remote(url, caller_token=...)``): a real wiremcp process
behind static tokens (``tests/support/whoami_server.py``) sees each call as the person who made it at the gateway,
in both eras (the handshake era with a session per caller), while the gateway lists with its own token; a caller
without a token of their own is told so, and the upstream is never sent the caller's token to the gateway."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from tests.support.http import UvicornProcess, run_uvicorn
from tests.support.tasks import connect, start
from tests.support.whoami_server import TOKENS
from wiremcp import Context, MCPError, MCPServer
from wiremcp.errors import DefinitionError
from wiremcp.principal import Principal
from wiremcp.transports import Client, remote
from wiremcp.transports.upstream_callers import MAX_CALLERS

pytestmark = pytest.mark.timeout(60)

AT_UPSTREAM = {"alice": "alice-at-upstream", "bob": "bob-at-upstream"}
"""Each person's token at the upstream, as the gateway keeps them (``upstream_token`` does, for a sign-in)."""


async def their_token(ctx: Context) -> str:
    subject = getattr(ctx.principal, "subject", None)
    if subject not in AT_UPSTREAM:
        raise LookupError("not signed in at the upstream")
    return AT_UPSTREAM[subject]


@pytest.fixture(scope="module")
def upstream() -> Iterator[UvicornProcess]:
    with run_uvicorn("tests.support.whoami_server:server", {"WIREMCP_AUTH_STATIC_TOKENS": TOKENS}) as process:
        yield process


def gateway(upstream: UvicornProcess, protocol: str) -> MCPServer:
    server = MCPServer("gateway")
    server.mount(remote(upstream.url, headers={"Authorization": "Bearer gateway-token"}, caller_token=their_token,
                        protocol=protocol), prefix="up")
    return server


def person(subject: str) -> Principal:
    return Principal("https://gateway.test", subject)


@pytest.mark.parametrize("protocol", ["auto", "2025-11-25"])
async def test_each_call_reaches_the_upstream_as_the_person_who_made_it(upstream: UvicornProcess,
                                                                        protocol: str) -> None:
    server = gateway(upstream, protocol)
    async with Client(server, principal=person("alice")) as alice, Client(server, principal=person("bob")) as bob:
        answers = await asyncio.gather(*(client.call_tool("up_whoami") for client in (alice, bob, alice, bob)))
        listed = [tool["name"] for tool in await alice.list_tools()]
    assert [answer["content"][0]["text"] for answer in answers] == ["alice", "bob", "alice", "bob"]
    assert listed == ["up_whoami", "up_hold", "up_outcome"]  # listed with the gateway's own token


@pytest.mark.parametrize("protocol", ["auto", "2025-11-25"])
async def test_a_caller_without_a_token_of_their_own_is_told_so(upstream: UvicornProcess, protocol: str) -> None:
    async with Client(gateway(upstream, protocol), principal=person("carol")) as carol:
        with pytest.raises(MCPError) as refused:
            await carol.call_tool("up_whoami")
    assert refused.value.code == -32600
    assert refused.value.message == ("upstream " + upstream.url + " is called with your own token, and there is "
                                     "none for you: not signed in at the upstream")


async def test_a_task_the_caller_cancels_is_cancelled_upstream_as_theirs(upstream: UvicornProcess) -> None:
    """The upstream's task is the caller's there too: it is followed, and cancelled, with the caller's token (the
    gateway's own would be told there is no such task)."""
    async with connect(gateway(upstream, "auto"), principal="alice") as alice:
        task = await start(alice, "up_hold", {"name": "alice-cancels"})
        await alice.request("tasks/cancel", {"taskId": task["taskId"]})
        ended = await alice.call_tool("up_outcome", {"name": "alice-cancels"})
    assert ended["content"][0]["text"] == "cancelled"


def test_caller_token_is_for_a_url_and_a_function() -> None:
    with pytest.raises(DefinitionError, match=r"remote\(caller_token=\.\.\.\) is for a url"):
        remote(command=["true"], caller_token=their_token)
    with pytest.raises(DefinitionError, match=r"remote\(caller_token=\.\.\.\) is for a url"):
        remote("http://127.0.0.1:9/mcp", caller_token="alice")  # type: ignore[arg-type]
    assert MAX_CALLERS >= 100
