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

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.conformance import run_suite, scenarios
from tests.support.http import UvicornProcess, run_uvicorn
from tests.support.node import node_bin as find_node


@pytest.fixture(scope="module")
def node_bin() -> Path:
    return find_node("the conformance suite")


@pytest.fixture(scope="module")
def everything() -> Iterator[UvicornProcess]:
    with run_uvicorn("examples.everything:server") as server:
        yield server


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
def gatewayed() -> Iterator[UvicornProcess]:
    """``tests/support/gateway_server.py``: a gateway whose every fixture comes from a remote child,
    ``examples/everything.py`` launched on stdio by the gateway (``wiremcp stdio``)."""
    with run_uvicorn("tests.support.gateway_server:server") as server:
        yield server


@pytest.mark.parametrize(("spec_version", "count"), [("2025-11-25", 33), (None, 65)])
def test_conformance_against_a_gateway_whose_fixtures_come_from_a_remote_child(
        node_bin: Path, gatewayed: UvicornProcess, spec_version: str | None, count: int) -> None:
    output = run_suite(node_bin, "0.2.0-alpha.12", gatewayed.url,
                       *(("--spec-version", spec_version) if spec_version else ()))
    passed, failed = scenarios(output)
    assert not failed, output[-4000:]
    assert len(passed) == count, output[-4000:]
    if spec_version is None:  # the extensions: each task followed upstream, the skills served from their copies
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
