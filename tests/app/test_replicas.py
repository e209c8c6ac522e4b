"""``wiremcp.replicas``: how a process names itself among replicas: one name per process life, the
configured replica id (cleaned) and a random incarnation, from which the replica id is read back."""

from __future__ import annotations

import re

import pytest

from wiremcp.replicas import LIFE, life_name, replica_of


def test_a_life_is_the_replica_id_and_a_new_incarnation() -> None:
    first, second = life_name("pod-1"), life_name("pod-1")
    assert re.fullmatch(r"pod-1@[0-9a-f]{8}", first), first
    assert first != second  # a restart under the same id is another life
    assert replica_of(first) == replica_of(second) == "pod-1"


def test_without_a_configured_id_the_replica_gets_a_random_one() -> None:
    name = life_name()
    assert re.fullmatch(r"r[0-9a-f]{10}@[0-9a-f]{8}", name), name
    assert replica_of(name) != replica_of(life_name())


@pytest.mark.parametrize(("configured", "replica"), [
    ("web-7.eu", "web-7.eu"),
    ("my pod/1:x@y", "my-pod-1-x-y"),  # safe in request ids (<name>:<n>) and Redis keys
    ("x" * 100, "x" * 64),
])
def test_the_configured_id_is_cleaned(configured: str, replica: str) -> None:
    name = life_name(configured)
    assert replica_of(name) == replica
    assert name.count(LIFE) == 1
    assert ":" not in name
