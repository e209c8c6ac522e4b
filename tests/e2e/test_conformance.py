"""The official conformance suite (``@modelcontextprotocol/conformance``) against ``examples/everything.py``
served by a real uvicorn: every scenario must pass. Each suite runs against one process (in-memory stores),
against a parent whose fixtures all come from a mounted child, and against two replicas sharing Redis
behind real nginx (``deploy/local_cluster.py``). ``--suite all`` (65 scenarios, the tasks and skills
extensions among them: ~11 s a run) runs on the last two only: the first would repeat the mounted run's
in-memory path without the mount.

The suite needs Node >= 22.19. A Node on PATH that is new enough is used; otherwise one is installed
once from the npm registry (the ``node-linux-<arch>@22`` package) into a cache directory (``tests/support/node.py``).
Without npm the tests are skipped, or fail under ``--require-parts`` (``tests/support/parts.py``).
"""

from __future__ import annotations

import asyncio
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from deploy.nginx import SHIPPED, Nginx
from tests.support.http import UvicornProcess, run_uvicorn, run_uvicorn_on
from tests.support.node import node_bin as find_node
from tests.support.node import node_env, npx
from tests.support.oauth_flow import REDIRECT, VERIFIER, Provider, Remote, UserAgent

RUN_BOUND = 600  # seconds; a failure bound for one suite run (npx may download the suite first)


@pytest.fixture(scope="module")
def node_bin() -> Path:
    return find_node("the conformance suite")


@pytest.fixture(scope="module")
def everything() -> Iterator[UvicornProcess]:
    with run_uvicorn("examples.everything:server") as server:
        yield server


@pytest.fixture(scope="module")
def behind_the_oauth_server(oauth_provider: Provider, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``examples/everything.py`` served with the OAuth server on (signing users in at a real provider), a user
    signed in, and nginx (the shipped configuration) in front adding that user's access token to every request, as
    a host would: the conformance suite, which sends no token of its own, then runs through the OAuth server's
    tokens. Yields the MCP URL behind nginx."""
    idp, sock = oauth_provider.idp, oauth_provider.sock
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    env = {"WIREMCP_AUTH_RESOURCE": f"{base}/mcp", "WIREMCP_OAUTH_PROVIDER": "oidc",
           "WIREMCP_OAUTH_DISCOVERY_URL": idp.discovery_url, "WIREMCP_OAUTH_CLIENT_ID": idp.client_id,
           "WIREMCP_OAUTH_CLIENT_SECRET": idp.client_secret, "WIREMCP_OAUTH_ACCESS_TOKEN_SECONDS": "3600"}
    with run_uvicorn_on(sock, "examples.everything:server", env):
        token = asyncio.run(signed_in_token(oauth_provider, Remote(base, f"{base}/mcp")))
        config = tmp_path_factory.mktemp("nginx") / "nginx.conf"
        config.write_text(SHIPPED.read_text().replace(
            "            proxy_set_header Host $http_host;\n",
            f'            proxy_set_header Host $http_host;\n            proxy_set_header Authorization "Bearer {token}";\n'))
        with Nginx([("127.0.0.1", sock.getsockname()[1])], config=config) as nginx:
            unauthenticated = httpx.post(f"{base}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                                         headers={"accept": "application/json, text/event-stream"})
            assert unauthenticated.status_code == 401  # the OAuth server's tokens are required
            yield f"{nginx.base_url}/mcp"


async def signed_in_token(provider: Provider, remote: Remote) -> str:
    async with httpx.AsyncClient(timeout=30) as http:
        registered = await http.post(remote.url("register"), json={"redirect_uris": [REDIRECT],
                                                                   "token_endpoint_auth_method": "none"})
        client_id = registered.json()["client_id"]
        agent = UserAgent(provider)
        try:
            code = (await agent.code(remote, client_id))["code"]
        finally:
            await agent.aclose()
        tokens = await http.post(remote.url("token"), data={
            "grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT, "client_id": client_id,
            "code_verifier": VERIFIER, "resource": remote.resource})
    return str(tokens.json()["access_token"])


@pytest.mark.parametrize(("version", "spec_version", "count"), [
    ("0.1.16", None, 32), ("0.2.0-alpha.12", "2025-11-25", 33), ("0.2.0-alpha.12", "2026-07-28", 40),
    ("0.2.0-alpha.12", None, 65),
])
def test_conformance_through_the_oauth_servers_tokens(node_bin: Path, behind_the_oauth_server: str, version: str,
                                                      spec_version: str | None, count: int) -> None:
    """Every run the suite makes against the server with the OAuth server off, made again with it on."""
    output = run_suite(node_bin, version, behind_the_oauth_server,
                       *(("--spec-version", spec_version) if spec_version else ()))
    passed, failed = scenarios(output)
    assert not failed, output[-4000:]
    assert len(passed) == count, output[-4000:]


def run_suite(node_bin: Path, version: str, url: str, *extra: str) -> str:
    command = [npx(node_bin), "-y", f"@modelcontextprotocol/conformance@{version}",
               "server", "--url", url, "--suite", "all", *extra]
    done = subprocess.run(command, capture_output=True, text=True, env=node_env(node_bin), timeout=RUN_BOUND)
    return done.stdout + done.stderr


def scenarios(output: str) -> tuple[list[str], list[str]]:
    """(passed, failed) scenario names from the suite's summary."""
    summary = output[output.rfind("=== SUMMARY ==="):]
    passed = re.findall(r"^✓ ([\w-]+):", summary, re.M)
    failed = re.findall(r"^✗ ([\w-]+):", summary, re.M)
    return passed, failed


def test_conformance_0_1_16_all_scenarios_pass(node_bin: Path, everything: UvicornProcess) -> None:
    output = run_suite(node_bin, "0.1.16", everything.url)
    passed, failed = scenarios(output)
    assert not failed, output[-4000:]
    assert len(passed) == 32, output[-4000:]
    assert re.search(r"^Total: \d+ passed, 0 failed", output, re.M), output[-4000:]


def test_conformance_0_2_0_alpha_12_spec_2025_11_25_all_scenarios_pass(node_bin: Path,
                                                                      everything: UvicornProcess) -> None:
    output = run_suite(node_bin, "0.2.0-alpha.12", everything.url, "--spec-version", "2025-11-25")
    passed, failed = scenarios(output)
    assert not failed, output[-4000:]
    assert len(passed) == 33, output[-4000:]
    assert re.search(r"^Total: \d+ passed, 0 failed", output, re.M), output[-4000:]


def test_conformance_0_2_0_alpha_12_spec_2026_07_28_all_scenarios_pass(node_bin: Path,
                                                                      everything: UvicornProcess) -> None:
    output = run_suite(node_bin, "0.2.0-alpha.12", everything.url, "--spec-version", "2026-07-28")
    passed, failed = scenarios(output)
    assert not failed, output[-4000:]
    assert len(passed) == 40, output[-4000:]
    assert re.search(r"^Total: \d+ passed, 0 failed", output, re.M), output[-4000:]
    assert "WARNING" not in output[output.rfind("=== SUMMARY ==="):], output[-4000:]


TASK_SCENARIOS = ["tasks-lifecycle", "tasks-capability-negotiation", "tasks-wire-fields", "tasks-request-state-removal",
                  "tasks-mrtr-input", "tasks-request-headers", "tasks-dispatch-and-envelope",
                  "tasks-status-notifications", "tasks-required-task-error", "tasks-mrtr-composition"]
"""The tasks extension's (``io.modelcontextprotocol/tasks``) scenarios: only ``--suite all`` without a spec
version runs extension scenarios (on the stateless 2026-07-28 wire), the skills extension's too."""


SKILL_CHECKS = {"sep-2640-skills-directory": 7, "sep-2640-skills-enumeration": 32, "sep-2640-skills-manifest": 6}
"""The Agent Skills extension's (SEP-2640) scenarios and how many of their checks pass: every one, none skipped
(without skills served, each scenario skips all of its checks and counts one pass)."""


def checks_passed(output: str, scenario: str) -> int:
    found = re.search(rf"^✓ {re.escape(scenario)}: (\d+) passed, 0 failed", output, re.M)
    return int(found.group(1)) if found else 0


@pytest.fixture(scope="module")
def mounted() -> Iterator[UvicornProcess]:
    """``tests/support/mounted_server.py``: a parent that serves nothing of its own, every fixture coming from
    ``examples/everything.py`` mounted in it (and a second child under a prefix, which the suite never names)."""
    with run_uvicorn("tests.support.mounted_server:server") as server:
        yield server


@pytest.mark.parametrize(("spec_version", "count"), [("2025-11-25", 33), (None, 65)])
def test_conformance_against_a_parent_whose_fixtures_come_from_a_mounted_child(
        node_bin: Path, mounted: UvicornProcess, spec_version: str | None, count: int) -> None:
    output = run_suite(node_bin, "0.2.0-alpha.12", mounted.url,
                       *(("--spec-version", spec_version) if spec_version else ()))
    passed, failed = scenarios(output)
    assert not failed, output[-4000:]
    assert len(passed) == count, output[-4000:]
    if spec_version is None:  # the stateless era's scenarios, the tasks and the skills extensions
        assert set(TASK_SCENARIOS) <= set(passed), output[-4000:]
        assert {name: checks_passed(output, name) for name in SKILL_CHECKS} == SKILL_CHECKS, output[-4000:]


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    """``deploy/local_cluster.py``: two replicas sharing a real Redis, behind real nginx running the shipped
    ``deploy/nginx.conf`` (round robin without affinity: every request of a session may land on either
    replica)."""
    from deploy.local_cluster import LocalCluster

    with LocalCluster(2, server="examples.everything:server") as running:
        yield running


@pytest.mark.parametrize(("version", "spec_version", "count"), [
    ("0.1.16", None, 32), ("0.2.0-alpha.12", "2025-11-25", 33), ("0.2.0-alpha.12", "2026-07-28", 40),
    ("0.2.0-alpha.12", None, 65)])
def test_conformance_against_two_replicas_behind_a_round_robin_balancer(
        node_bin: Path, cluster: Any, version: str, spec_version: str | None, count: int) -> None:
    output = run_suite(node_bin, version, cluster.url, *(("--spec-version", spec_version) if spec_version else ()))
    passed, failed = scenarios(output)
    assert not failed, output[-4000:]
    assert len(passed) == count, output[-4000:]
    assert re.search(r"^Total: \d+ passed, 0 failed", output, re.M), output[-4000:]
    if spec_version is None and version == "0.2.0-alpha.12":  # the extension scenarios: tasks and skills
        assert set(TASK_SCENARIOS) <= set(passed), output[-4000:]
        assert {name: checks_passed(output, name) for name in SKILL_CHECKS} == SKILL_CHECKS, output[-4000:]
