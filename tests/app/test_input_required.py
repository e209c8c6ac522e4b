"""``wiremcp.input_required``: the handler's side of a multi round-trip request: ``InputRequired`` (what a
handler raises or returns to ask for input), and ``InputExchange`` (the answers a round brings, under keys
that stay the same from round to round because handlers replay in order)."""

from __future__ import annotations

import pytest

from wiremcp import InputRequired
from wiremcp.input_required import INPUT_CAPABLE, INPUT_METHODS, InputExchange, input_key

MRTR = "2026-07-28/basic/patterns/mrtr"
ASK: dict[str, object] = {"method": "roots/list"}


def test_the_three_kinds_of_input_and_the_requests_that_may_ask_for_them() -> None:
    assert {"elicitation/create", "sampling/createMessage", "roots/list"} == INPUT_METHODS
    assert {"tools/call", "prompts/get", "resources/read"} == INPUT_CAPABLE


@pytest.mark.spec(f"{MRTR}#inputrequests")
def test_input_keys_name_the_kind_and_the_place() -> None:
    assert input_key("elicitation/create", 1) == "elicitation-1"
    assert input_key("sampling/createMessage", 2) == "sampling-2"
    assert input_key("roots/list", 3) == "roots-3"


def test_input_required_keeps_its_own_copy_of_the_requests_and_the_handlers_state() -> None:
    requests = {"k": ASK}
    raised = InputRequired(requests, request_state="step-1")
    requests["other"] = ASK
    assert raised.input_requests == {"k": ASK}
    assert raised.request_state == "step-1"
    assert str(raised) == "input required"
    empty = InputRequired()
    assert (empty.input_requests, empty.request_state) == ({}, None)


@pytest.mark.spec(f"{MRTR}#client-requirements-basic-workflow")
def test_a_retry_brings_its_answers_on_top_of_the_earlier_ones() -> None:
    earlier = {"elicitation-1": {"action": "accept"}, "sampling-2": {"role": "assistant"}}
    exchange = InputExchange(earlier, {"sampling-2": {"role": "assistant", "model": "m"}, "roots-3": {"roots": []}},
                             app_state="mine")
    assert exchange.responses == {"sampling-2": {"role": "assistant", "model": "m"}, "roots-3": {"roots": []}}
    assert exchange.answers == {"elicitation-1": {"action": "accept"},
                                "sampling-2": {"role": "assistant", "model": "m"}, "roots-3": {"roots": []}}
    assert exchange.answer("roots-3") == {"roots": []}
    assert exchange.answer("elicitation-9") is None
    assert exchange.app_state == "mine"


@pytest.mark.spec(f"{MRTR}#server-requirements-basic-workflow")
def test_the_handlers_input_points_are_numbered_in_the_order_it_reaches_them() -> None:
    first_round, second_round = InputExchange(), InputExchange({"elicitation-1": {"action": "decline"}})
    for exchange in (first_round, second_round):
        assert exchange.asked == 0
        assert [exchange.next_key(m) for m in ("elicitation/create", "sampling/createMessage", "roots/list")] == [
            "elicitation-1", "sampling-2", "roots-3"]
        assert exchange.asked == 3
    assert InputExchange().answers == {}
