"""``wiremcp.protocol``: the protocol revisions and the facts that differ between them: which version
``initialize`` answers with, which revisions are of the stateless era, and how revisions and log levels
order."""

from __future__ import annotations

from typing import Any

import pytest

from wiremcp.protocol import (
    BATCH_VERSIONS,
    HANDSHAKE_VERSIONS,
    LATEST_HANDSHAKE_VERSION,
    LATEST_STATELESS_VERSION,
    LOG_LEVEL_RANK,
    LOG_LEVELS,
    STATELESS_VERSIONS,
    SUPPORTED_VERSIONS,
    at_least,
    is_stateless,
    negotiate,
)


def test_the_revisions_served() -> None:
    assert HANDSHAKE_VERSIONS == ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")  # newest first
    assert STATELESS_VERSIONS == (LATEST_STATELESS_VERSION,) == ("2026-07-28",)
    assert SUPPORTED_VERSIONS == STATELESS_VERSIONS + HANDSHAKE_VERSIONS
    assert HANDSHAKE_VERSIONS[0] == LATEST_HANDSHAKE_VERSION
    assert {"2025-03-26"} == BATCH_VERSIONS  # the only revision whose clients may batch


@pytest.mark.spec("2025-11-25/basic/lifecycle#version-negotiation")
@pytest.mark.parametrize("version", HANDSHAKE_VERSIONS)
def test_initialize_is_answered_with_a_supported_version_as_requested(version: str) -> None:
    assert negotiate(version) == version


@pytest.mark.spec("2025-11-25/basic/lifecycle#version-negotiation")
@pytest.mark.parametrize("requested", ["2024-01-01", "2026-07-28", "1.0.0", "", None, 20241105, ["2025-11-25"]])
def test_initialize_with_another_version_is_answered_with_the_latest(requested: Any) -> None:
    assert negotiate(requested) == LATEST_HANDSHAKE_VERSION


def test_revisions_are_dates_and_compare_as_such() -> None:
    assert at_least("2025-11-25", "2025-06-18")
    assert at_least("2025-06-18", "2025-06-18")
    assert not at_least("2024-11-05", "2025-03-26")


@pytest.mark.parametrize(("version", "stateless"), [
    ("2026-07-28", True), ("2027-01-01", True),  # anything from 2026-07-28 on is served as stateless
    ("2025-11-25", False), ("2024-11-05", False), (None, False), (20260728, False),
])
def test_which_revisions_are_of_the_stateless_era(version: Any, stateless: bool) -> None:
    assert is_stateless(version) is stateless


def test_log_levels_rank_from_debug_to_emergency() -> None:
    assert [LOG_LEVEL_RANK[level] for level in LOG_LEVELS] == list(range(8))
    assert LOG_LEVEL_RANK["debug"] < LOG_LEVEL_RANK["warning"] < LOG_LEVEL_RANK["emergency"]
