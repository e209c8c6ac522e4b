"""``wiremcp.completions``: what a completer's answer becomes on the wire (at most 100 values, ``total`` and
``hasMore`` when there are more), and ``Completer`` running sync and async completion functions alike."""

from __future__ import annotations

import threading

import pytest

from wiremcp.completions import MAX_VALUES, Completer, Completion, to_wire

RESULTS = "2025-11-25/server/utilities/completion#completion-results"


@pytest.mark.spec(RESULTS)
def test_a_list_of_values_is_the_completion_as_it_is() -> None:
    assert to_wire(["alice", "albert"]) == {"completion": {"values": ["alice", "albert"]}}
    assert to_wire(("a", 2, 3.5)) == {"completion": {"values": ["a", "2", "3.5"]}}
    assert to_wire(None) == {"completion": {"values": []}}
    assert to_wire([]) == {"completion": {"values": []}}


@pytest.mark.spec(RESULTS)
def test_more_values_than_allowed_are_cut_and_said_to_be_more() -> None:
    many = [f"v{i}" for i in range(MAX_VALUES + 50)]
    wire = to_wire(many)["completion"]
    assert wire["values"] == many[:MAX_VALUES]
    assert (wire["total"], wire["hasMore"]) == (MAX_VALUES + 50, True)
    counted = to_wire(Completion(many, total=1_000))["completion"]
    assert (len(counted["values"]), counted["total"], counted["hasMore"]) == (MAX_VALUES, 1_000, True)


@pytest.mark.spec(RESULTS)
def test_a_completion_says_what_it_knows_of_the_rest() -> None:
    assert to_wire(Completion(["a"], total=7, has_more=True)) == {
        "completion": {"values": ["a"], "total": 7, "hasMore": True}}
    assert to_wire(Completion(["a"], has_more=False)) == {"completion": {"values": ["a"], "hasMore": False}}
    exactly = [str(i) for i in range(MAX_VALUES)]
    assert to_wire(Completion(exactly)) == {"completion": {"values": exactly}}  # all of them: nothing more


async def test_sync_and_async_completers_run_on_the_event_loops_thread() -> None:
    seen: list[tuple[str, dict[str, str], bool]] = []
    loop_thread = threading.get_ident()

    def names(value: str, arguments: dict[str, str]) -> list[str]:
        seen.append((value, arguments, threading.get_ident() == loop_thread))
        return [n for n in ("alice", "albert", "bob") if n.startswith(value)]

    async def ids(value: str, arguments: dict[str, str]) -> Completion:
        seen.append((value, arguments, threading.get_ident() == loop_thread))
        return Completion([f"{value}{i}" for i in range(3)], total=3, has_more=False)

    assert await Completer(names).complete("al", {"greeting": "hi"}) == {"completion": {"values": ["alice", "albert"]}}
    assert await Completer(ids).complete("x", {}) == {
        "completion": {"values": ["x0", "x1", "x2"], "total": 3, "hasMore": False}}
    assert seen == [("al", {"greeting": "hi"}, True), ("x", {}, True)]
