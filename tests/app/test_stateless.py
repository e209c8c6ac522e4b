"""``wiremcp.stateless``: what every stateless-era (2026-07-28) result carries (``resultType``, the server's
identity in ``_meta``, caching hints on what may be cached), ``server/discover``, and the handshake-era
methods the era does not have."""

from __future__ import annotations

import pytest

from wiremcp import MCPServer
from wiremcp.methods import NOT_STATELESS as REMOVED
from wiremcp.protocol import META_SERVER_INFO, SUPPORTED_VERSIONS, TASKS_EXTENSION
from wiremcp.stateless import CACHEABLE, complete, discover

CACHING = "2026-07-28/server/utilities/caching"


def _server(**options: object) -> MCPServer:
    return MCPServer("stateless", "3.1", title="Stateless", **options)  # type: ignore[arg-type]


@pytest.mark.spec("2026-07-28/basic/index#result-responses")
@pytest.mark.spec("2026-07-28/basic/index#_meta")
def test_a_result_is_complete_and_names_the_server_beside_its_own_meta() -> None:
    result = complete({"content": [], "_meta": {"mine": 1}}, "tools/call", _server())
    assert result == {"resultType": "complete", "content": [],
                      "_meta": {"mine": 1, META_SERVER_INFO: {"name": "stateless", "version": "3.1", "title": "Stateless"}}}


@pytest.mark.spec(f"{CACHING}#cacheable-results")
@pytest.mark.parametrize("method", sorted(CACHEABLE))
def test_cacheable_results_carry_the_servers_hints_unless_given_their_own(method: str) -> None:
    server = _server(cache_ttl_ms=60_000, cache_scope="public")
    assert {k: v for k, v in complete({}, method, server).items() if k != "_meta"} == {
        "resultType": "complete", "ttlMs": 60_000, "cacheScope": "public"}
    hinted = complete({}, method, server, hints=(5_000, "private"))
    assert (hinted["ttlMs"], hinted["cacheScope"]) == (5_000, "private")
    assert complete({"ttlMs": 1}, method, server)["ttlMs"] == 1
    default = complete({}, method, _server())
    assert (default["ttlMs"], default["cacheScope"]) == (0, "private")  # not to be reused, by default


@pytest.mark.spec(f"{CACHING}#cacheable-results")
@pytest.mark.parametrize("method", ["tools/call", "prompts/get", "completion/complete", "subscriptions/listen"])
def test_other_results_carry_no_hints(method: str) -> None:
    result = complete({}, method, _server(cache_ttl_ms=60_000, cache_scope="public"), hints=(1, "public"))
    assert not {"ttlMs", "cacheScope"} & result.keys()


@pytest.mark.spec("2026-07-28/server/discover#response")
def test_discover_lists_every_supported_version_and_the_servers_capabilities() -> None:
    bare = discover(_server())
    assert bare == {"supportedVersions": list(SUPPORTED_VERSIONS), "capabilities": {"logging": {}}}
    server = _server(instructions="Use the tools.")

    @server.tool()
    def echo(text: str) -> str:
        return text

    assert discover(server) == {"supportedVersions": list(SUPPORTED_VERSIONS),
                                "capabilities": {"logging": {}, "tools": {"listChanged": True}},
                                "instructions": "Use the tools."}


@pytest.mark.spec("2026-07-28/extensions/tasks#capability-negotiation")
def test_task_tools_are_the_tasks_extension_not_the_tasks_capability() -> None:
    server = _server()

    @server.tool(task_support="optional")
    async def job() -> str:
        return "done"

    capabilities = discover(server)["capabilities"]
    assert "tasks" not in capabilities
    assert capabilities["extensions"] == {TASKS_EXTENSION: {}}
    assert "tasks" in server.capabilities()  # what the handshake era declares is unchanged


def test_the_handshake_only_methods() -> None:
    assert {"initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe",
            "tasks/result", "tasks/list"} == REMOVED
    assert not REMOVED & CACHEABLE
