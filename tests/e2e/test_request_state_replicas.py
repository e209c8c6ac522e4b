"""MRTR across replicas: two real ``uvicorn app:asgi`` processes that share ``WIREMCP_REQUEST_STATE_KEYS``
finish each other's exchanges; a process with another key refuses the state with -32602.

Each round of a two-round exchange is sent to a chosen process, as a load balancer without
affinity would; the final answer names the process that completed it.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.http import ACCEPT_BOTH, UvicornProcess, run_replicas, run_uvicorn
from wiremcp.errors import INVALID_PARAMS
from wiremcp.protocol import META_CAPABILITIES, META_CLIENT_INFO, META_VERSION

SERVER = "tests.support.replica_server:server"
VERSION = "2026-07-28"

pytestmark = [pytest.mark.timeout(60), pytest.mark.spec(f"{VERSION}/basic/patterns/mrtr#basic-workflow")]


def _key() -> str:
    return base64.urlsafe_b64encode(os.urandom(32)).decode()


@pytest.fixture(scope="module")
def replicas() -> Iterator[dict[str, UvicornProcess]]:
    """A and B share a key; C has another one."""
    shared, other = _key(), _key()
    keys = {"A": shared, "B": shared, "C": other}
    with run_replicas(SERVER, {name: {"WIREMCP_REQUEST_STATE_KEYS": key} for name, key in keys.items()}) as running:
        yield running


class Exchange:
    """One ``book`` call and its retries, each round sent to whichever process the test picks."""

    def __init__(self, http: httpx.AsyncClient, city: str) -> None:
        self.http = http
        self.params: dict[str, Any] = {
            "name": "book", "arguments": {"city": city},
            "_meta": {META_VERSION: VERSION, META_CAPABILITIES: {"elicitation": {}},
                      META_CLIENT_INFO: {"name": "replica-test", "version": "0"}}}
        self.rid = 0

    async def send(self, process: UvicornProcess, **retry: Any) -> tuple[int, dict[str, Any]]:
        self.rid += 1
        body = {"jsonrpc": "2.0", "id": self.rid, "method": "tools/call", "params": {**self.params, **retry}}
        headers = {"accept": ACCEPT_BOTH, "content-type": "application/json", "mcp-protocol-version": VERSION,
                   "mcp-method": "tools/call", "mcp-name": "book"}
        response = await self.http.post(process.url, content=json.dumps(body), headers=headers)
        assert response.headers["content-type"] == "application/json", response.headers
        answer = response.json()
        assert answer["id"] == self.rid
        return response.status_code, answer

    async def round(self, process: UvicornProcess, **retry: Any) -> dict[str, Any]:
        status, answer = await self.send(process, **retry)
        assert status == 200, answer
        assert "error" not in answer, answer
        result: dict[str, Any] = answer["result"]
        return result


def accept(value: str) -> dict[str, Any]:
    return {"action": "accept", "content": {"value": value}}


@pytest.mark.parametrize("route", ["ABA", "AAB", "ABB", "BAB"])
async def test_replicas_sharing_the_keys_finish_each_others_exchanges(
        route: str, replicas: dict[str, UvicornProcess], http: httpx.AsyncClient) -> None:
    first, second, third = (replicas[name] for name in route)
    exchange = Exchange(http, "Oslo")
    round_1 = await exchange.round(first)
    assert round_1["resultType"] == "input_required"
    assert list(round_1["inputRequests"]) == ["elicitation-1"]
    assert round_1["inputRequests"]["elicitation-1"]["method"] == "elicitation/create"
    round_2 = await exchange.round(second, inputResponses={"elicitation-1": accept("May 3-5")},
                                   requestState=round_1["requestState"])
    assert round_2["resultType"] == "input_required"
    assert list(round_2["inputRequests"]) == ["elicitation-2"]
    # The last retry carries only the last answer: the first one comes from the state the other process sealed.
    done = await exchange.round(third, inputResponses={"elicitation-2": accept("yes")},
                                requestState=round_2["requestState"])
    assert done["resultType"] == "complete"
    assert done["content"][0]["text"] == f"Oslo: May 3-5, yes (pid {third.process.pid})"


@pytest.mark.parametrize(("issuer", "receiver"), [("A", "C"), ("C", "B")])
async def test_a_replica_with_another_key_refuses_the_state(issuer: str, receiver: str,
                                                           replicas: dict[str, UvicornProcess],
                                                           http: httpx.AsyncClient) -> None:
    exchange = Exchange(http, "Bergen")
    round_1 = await exchange.round(replicas[issuer])
    status, answer = await exchange.send(replicas[receiver], inputResponses={"elicitation-1": accept("June")},
                                         requestState=round_1["requestState"])
    assert status in (200, 400)  # the spec leaves the status of this error open; the code is what counts
    assert answer["error"]["code"] == INVALID_PARAMS
    assert answer["error"]["message"] == "Invalid requestState: not a state this server issued"
    # The issuer still completes its own exchange (what the client would do on a sticky retry).
    round_2 = await exchange.round(replicas[issuer], inputResponses={"elicitation-1": accept("June")},
                                   requestState=round_1["requestState"])
    assert list(round_2["inputRequests"]) == ["elicitation-2"]


async def test_replicas_on_one_redis_share_a_key_without_configuring_one(http: httpx.AsyncClient) -> None:
    """With ``WIREMCP_REDIS_URL`` and no ``WIREMCP_REQUEST_STATE_KEYS``, the replicas agree on a key kept in Redis."""
    from tests.support.redis import run_redis

    with run_redis() as redis:
        env = {"WIREMCP_REDIS_URL": redis.url, "WIREMCP_REQUEST_STATE_KEYS": ""}
        with run_uvicorn(SERVER, env) as a, run_uvicorn(SERVER, env) as b:
            exchange = Exchange(http, "Tromsø")
            round_1 = await exchange.round(a)
            round_2 = await exchange.round(b, inputResponses={"elicitation-1": accept("July")},
                                           requestState=round_1["requestState"])
            done = await exchange.round(a, inputResponses={"elicitation-2": accept("yes")},
                                        requestState=round_2["requestState"])
    assert done["content"][0]["text"] == f"Tromsø: July, yes (pid {a.process.pid})"
