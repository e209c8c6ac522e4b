"""Sealed ``requestState`` (MRTR, stateless era): what the sealer accepts and refuses, and that the dispatcher
refuses a retry with a bad state before the handler runs.

``requestState`` travels through the client, so every way a client could alter or replay it is tried:
changed characters, appended text, expiry (on an injected clock), another principal, another method,
other parameters, another key. Each is refused with -32602 and a message that says why.
"""

from __future__ import annotations

import base64
import hashlib
import os
import string
from typing import Any

import orjson
import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from tests.support.http import FakeClock
from wiremcp import Context, MCPServer
from wiremcp.errors import INVALID_PARAMS, InvalidParams
from wiremcp.principal import Principal
from wiremcp.request_state import (
    OpenedState,
    RequestStateRejected,
    RequestStateSealer,
    decode_key,
    params_digest,
)
from wiremcp.runtime import Runtime
from wiremcp.transports.memory import Client
from wiremcp.types import JSONObject

MRTR = "2026-07-28/basic/patterns/mrtr"
pytestmark = pytest.mark.spec(f"{MRTR}#server-requirements-basic-workflow")

KEY = bytes(range(32))
NEW_KEY = bytes(range(100, 132))
OTHER_KEY = bytes(range(1, 33))
PARAMS: JSONObject = {"name": "book", "arguments": {"city": "Oslo", "nights": 2}}
ANSWERS: JSONObject = {"elicitation-1": {"action": "accept", "content": {"dates": "secret-dates"}}}
ALPHABET = string.ascii_letters + string.digits + "-_"


def seal(sealer: RequestStateSealer, *, answers: JSONObject | None = None, app_state: str | None = "step-1",
         principal: str = "alice", method: str = "tools/call", params: JSONObject | None = None) -> str:
    return sealer.seal(owner=principal, method=method, params=PARAMS if params is None else params,
                       answers=ANSWERS if answers is None else answers, app_state=app_state)


def open_(sealer: RequestStateSealer, token: object, *, principal: str = "alice", method: str = "tools/call",
          params: JSONObject | None = None) -> OpenedState:
    return sealer.open(token, owner=principal, method=method, params=PARAMS if params is None else params)


def refused(sealer: RequestStateSealer, token: object, why: str, **binding: Any) -> None:
    """``token`` is refused as invalid params, with ``why`` in the message."""
    with pytest.raises(RequestStateRejected) as raised:
        open_(sealer, token, **binding)
    assert isinstance(raised.value, InvalidParams)
    assert raised.value.code == INVALID_PARAMS
    assert raised.value.message.startswith("Invalid requestState: ")
    assert why in raised.value.message
    assert raised.value.to_error()["code"] == INVALID_PARAMS


ISSUED_HERE = "not a state this server issued"
VERIFICATION = "failed verification"


# -- seal and open ------------------------------------------------------------------------------------------
def test_a_sealed_state_opens_to_what_was_sealed() -> None:
    sealer = RequestStateSealer([KEY])
    assert open_(sealer, seal(sealer)) == OpenedState(ANSWERS, "step-1")
    assert open_(sealer, seal(sealer, answers={}, app_state=None)) == OpenedState({}, None)


def test_the_token_is_opaque_url_safe_text_and_never_repeats() -> None:
    sealer = RequestStateSealer([KEY])
    first, second = seal(sealer), seal(sealer)
    assert first != second  # a fresh nonce each time
    for token in (first, second):
        assert set(token) <= set(ALPHABET)  # no padding, no characters a client might escape
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        assert b"secret-dates" not in raw  # sealed, not merely encoded
        assert b"alice" not in raw


def test_what_only_the_retry_carries_is_not_bound() -> None:
    """The retry differs from the first round in ``_meta``, ``inputResponses`` and ``requestState`` only."""
    sealer = RequestStateSealer([KEY])
    token = seal(sealer, params={**PARAMS, "_meta": {"progressToken": 1}})
    retry = {"arguments": {"nights": 2, "city": "Oslo"}, "name": "book", "_meta": {"other": True},
             "inputResponses": {"elicitation-1": {"action": "decline"}}, "requestState": token}
    assert open_(sealer, token, params=retry).answers == ANSWERS


def test_the_params_digest_names_the_method_and_the_salient_params() -> None:
    digest = params_digest("tools/call", PARAMS)
    assert digest == params_digest("tools/call", {**PARAMS, "_meta": {}, "inputResponses": {}, "requestState": "x"})
    assert digest != params_digest("prompts/get", PARAMS)
    assert digest != params_digest("tools/call", {**PARAMS, "arguments": {"city": "Bergen", "nights": 2}})


# -- tampering ----------------------------------------------------------------------------------------------
def _tokens_of_every_length_class() -> list[str]:
    """Tokens whose length leaves every possible remainder mod 4 (the last character's unused bits differ)."""
    sealer = RequestStateSealer([KEY])
    by_class: dict[int, str] = {}
    size = 0
    while len(by_class) < 3:
        token = seal(sealer, app_state="x" * size)
        by_class.setdefault(len(token) % 4, token)
        size += 1
    return list(by_class.values())


@pytest.mark.parametrize("token", _tokens_of_every_length_class(), ids=lambda t: f"length-mod-4-is-{len(t) % 4}")
def test_every_single_changed_character_is_refused(token: str) -> None:
    sealer = RequestStateSealer([KEY])
    assert open_(sealer, token).app_state is not None
    for index, char in enumerate(token):
        replacement = ALPHABET[(ALPHABET.index(char) + 1) % len(ALPHABET)]
        flipped = token[:index] + replacement + token[index + 1:]
        with pytest.raises(RequestStateRejected):
            open_(sealer, flipped)
    last = len(token) - 1
    for replacement in ALPHABET.replace(token[last], ""):  # including values that differ only in unused bits
        with pytest.raises(RequestStateRejected):
            open_(sealer, token[:last] + replacement)


TAMPERED = {f"Invalid requestState: {ISSUED_HERE}",
            "Invalid requestState: it failed verification (tampered or not issued here)"}


@pytest.mark.parametrize("change", [
    pytest.param(lambda t: t + "-TAMPERED", id="appended-tampered"),
    pytest.param(lambda t: t + "AAAA", id="appended-base64"),
    pytest.param(lambda t: t[:-1], id="last-character-dropped"),
    pytest.param(lambda t: t[:-4], id="last-4-characters-dropped"),
    pytest.param(lambda t: t[:40], id="truncated"),
    pytest.param(lambda t: t + "!!!!", id="appended-non-base64"),
    pytest.param(lambda t: t[:10] + "...." + t[10:], id="inserted-dots"),
    pytest.param(lambda t: t[:10] + " \n\t*" + t[10:], id="inserted-whitespace"),
    pytest.param(lambda t: t + "==", id="padding-added"),
    pytest.param(lambda t: t.upper(), id="upper-cased"),
    pytest.param(lambda t: t[::-1], id="reversed"),
    pytest.param(lambda t: "-" + t[1:] if t[0] != "-" else "_" + t[1:], id="first-character"),
])
def test_an_altered_token_is_refused(change: Any) -> None:
    sealer = RequestStateSealer([KEY])
    token = seal(sealer)
    altered = change(token)
    assert altered != token
    with pytest.raises(RequestStateRejected) as raised:
        open_(sealer, altered)
    assert raised.value.code == INVALID_PARAMS
    assert raised.value.message in TAMPERED


def test_a_changed_key_id_is_refused_even_when_it_names_another_known_key() -> None:
    sealer = RequestStateSealer([KEY, OTHER_KEY])
    token = seal(sealer)
    raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    other_id = hashlib.sha256(OTHER_KEY).digest()[:4]
    swapped = base64.urlsafe_b64encode(other_id + raw[4:]).decode().rstrip("=")
    refused(sealer, swapped, VERIFICATION)


# -- binding: expiry, principal, method, parameters ----------------------------------------------------------
def test_a_state_expires_after_its_ttl() -> None:
    clock = FakeClock(1_000.0)
    sealer = RequestStateSealer([KEY], ttl=60, clock=clock)
    token = seal(sealer)
    clock.advance(59)
    assert open_(sealer, token).answers == ANSWERS
    clock.advance(1)
    assert open_(sealer, token).answers == ANSWERS  # the last valid second
    clock.advance(0.5)
    refused(sealer, token, "it has expired; send the request again without it")


@pytest.mark.parametrize("principal", ["bob", "", "Alice", "alice "])
def test_a_state_is_refused_for_another_principal(principal: str) -> None:
    sealer = RequestStateSealer([KEY])
    refused(sealer, seal(sealer), "it was issued to another principal", principal=principal)


def test_an_anonymous_state_is_refused_for_a_principal() -> None:
    sealer = RequestStateSealer([KEY])
    refused(sealer, seal(sealer, principal=""), "another principal", principal="alice")


@pytest.mark.parametrize("method", ["prompts/get", "resources/read", "tools/list"])
def test_a_state_is_refused_for_another_method(method: str) -> None:
    sealer = RequestStateSealer([KEY])
    refused(sealer, seal(sealer), "it was issued for another request (method or parameters differ)", method=method)


@pytest.mark.parametrize("params", [
    pytest.param({"name": "book", "arguments": {"city": "Bergen", "nights": 2}}, id="other-argument-value"),
    pytest.param({"name": "book", "arguments": {"city": "Oslo"}}, id="argument-dropped"),
    pytest.param({"name": "book", "arguments": {"city": "Oslo", "nights": 2, "vip": True}}, id="argument-added"),
    pytest.param({"name": "cancel", "arguments": {"city": "Oslo", "nights": 2}}, id="other-tool"),
    pytest.param({"name": "book", "arguments": {"city": "Oslo", "nights": 2.5}}, id="other-type"),
    pytest.param({**PARAMS, "task": {"ttl": 1}}, id="extra-param"),
])
def test_a_state_is_refused_for_other_params(params: JSONObject) -> None:
    sealer = RequestStateSealer([KEY])
    refused(sealer, seal(sealer), "another request", params=params)


# -- keys ----------------------------------------------------------------------------------------------------
def test_a_state_sealed_with_an_unknown_key_is_refused() -> None:
    token = seal(RequestStateSealer([OTHER_KEY]))
    refused(RequestStateSealer([KEY]), token, ISSUED_HERE)
    refused(RequestStateSealer(), token, ISSUED_HERE)  # a process without configured keys makes its own


def test_keys_rotate_the_first_seals_and_all_open() -> None:
    old = RequestStateSealer([KEY])
    rotated = RequestStateSealer([NEW_KEY, KEY])
    new_only = RequestStateSealer([NEW_KEY])
    issued_before = seal(old)
    assert open_(rotated, issued_before).answers == ANSWERS  # the old key still opens
    issued_after = seal(rotated)
    assert open_(new_only, issued_after).answers == ANSWERS  # the new key seals
    refused(old, issued_after, ISSUED_HERE)
    refused(new_only, issued_before, ISSUED_HERE)  # once the old key is retired, its states are gone


def test_two_sealers_with_the_same_keys_open_each_others_states() -> None:
    assert open_(RequestStateSealer([KEY]), seal(RequestStateSealer([KEY]))).answers == ANSWERS


@pytest.mark.parametrize("size", [16, 24, 32])
def test_keys_are_base64_of_16_24_or_32_bytes(size: int) -> None:
    raw = os.urandom(size)
    for text in (base64.urlsafe_b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode().rstrip("=")):
        assert decode_key(text) == raw
    sealer = RequestStateSealer.from_strings([base64.urlsafe_b64encode(raw).decode()])
    assert open_(RequestStateSealer([raw]), seal(sealer)).answers == ANSWERS


@pytest.mark.parametrize("size", [0, 8, 15, 17, 31, 33, 64])
def test_keys_of_other_sizes_are_refused(size: int) -> None:
    with pytest.raises(ValueError, match="16, 24 or 32 bytes"):
        decode_key(base64.urlsafe_b64encode(os.urandom(size)).decode())


@pytest.mark.parametrize("size", [0, 8, 31, 64])
def test_raw_keys_of_other_sizes_are_refused_when_given(size: int) -> None:
    with pytest.raises(ValueError, match="16, 24 or 32 bytes"):
        RequestStateSealer([KEY, os.urandom(size)])


def test_the_ciphers_are_made_at_the_first_state_and_again_for_new_keys() -> None:
    sealer = RequestStateSealer([KEY])
    assert sealer._made is None  # cryptography is not needed until a state is sealed or opened
    issued = seal(sealer)
    made = sealer._made
    assert made is not None
    assert open_(sealer, issued).answers == ANSWERS
    assert sealer._made is made
    sealer.use_keys([NEW_KEY, KEY])
    assert sealer._made is None
    assert open_(sealer, issued).answers == ANSWERS


def test_from_strings_seals_with_the_first_key() -> None:
    sealer = RequestStateSealer.from_strings([base64.urlsafe_b64encode(k).decode() for k in (NEW_KEY, KEY)])
    issued = seal(sealer)
    assert open_(RequestStateSealer([NEW_KEY]), issued).answers == ANSWERS
    refused(RequestStateSealer([KEY]), issued, ISSUED_HERE)


# -- garbage -------------------------------------------------------------------------------------------------
def _sealed_payload(payload: Any, key: bytes = KEY) -> str:
    """A token sealed with a real key around any payload (what only a key holder could make)."""
    key_id = hashlib.sha256(key).digest()[:4]
    nonce = os.urandom(12)
    sealed = AESGCM(key).encrypt(nonce, orjson.dumps(payload), key_id)
    return base64.urlsafe_b64encode(key_id + nonce + sealed).decode().rstrip("=")


@pytest.mark.parametrize(("token", "why"), [
    pytest.param("", ISSUED_HERE, id="empty"),
    pytest.param("x", ISSUED_HERE, id="one-character"),
    pytest.param("AAAA", ISSUED_HERE, id="too-short"),
    pytest.param("!!!!", ISSUED_HERE, id="not-base64"),
    pytest.param("grüße", ISSUED_HERE, id="non-ascii"),
    pytest.param("a" * ((1 << 20) + 1), ISSUED_HERE, id="oversized"),
    pytest.param(None, ISSUED_HERE, id="null"),
    pytest.param(12345, ISSUED_HERE, id="number"),
    pytest.param(True, ISSUED_HERE, id="boolean"),
    pytest.param(b"bytes", ISSUED_HERE, id="bytes"),
    pytest.param(["token"], ISSUED_HERE, id="list"),
    pytest.param({"token": "x"}, ISSUED_HERE, id="object"),
    pytest.param(base64.urlsafe_b64encode(hashlib.sha256(KEY).digest()[:4] + os.urandom(12)).decode().rstrip("="),
                 VERIFICATION, id="key-id-and-nonce-only"),
    pytest.param(base64.urlsafe_b64encode(hashlib.sha256(KEY).digest()[:4] + os.urandom(200)).decode().rstrip("="),
                 VERIFICATION, id="random-bytes-after-a-known-key-id"),
    pytest.param(_sealed_payload(["not", "an", "object"]), "malformed", id="payload-not-an-object"),
    pytest.param(_sealed_payload({"p": "alice", "d": params_digest("tools/call", PARAMS)}), "expired",
                 id="payload-without-expiry"),
])
def test_garbage_is_refused(token: object, why: str) -> None:
    refused(RequestStateSealer([KEY]), token, why)


def test_an_oversized_token_is_refused_before_decoding() -> None:
    big = seal(RequestStateSealer([KEY])) + "A" * (1 << 20)
    refused(RequestStateSealer([KEY]), big, ISSUED_HERE)


# -- the dispatcher: a bad state is refused before the handler runs ---------------------------------------------
class Booking:
    """A server whose tool needs two rounds of input, counting how often its handlers run."""

    def __init__(self, keys: list[bytes] | None = None) -> None:
        self.runs = {"book": 0, "plan": 0}
        self.server = server = MCPServer("booking")
        Runtime(server, request_states=RequestStateSealer(keys or [KEY]))

        @server.tool()
        async def book(city: str, nights: int, ctx: Context) -> str:
            self.runs["book"] += 1
            dates = await ctx.elicit(f"Which dates in {city}?", {"type": "object",
                                                                 "properties": {"dates": {"type": "string"}}})
            confirm = await ctx.elicit("Confirm?", {"type": "object", "properties": {"ok": {"type": "boolean"}}})
            return f"{city} x{nights}: {(dates.content or {}).get('dates')} ok={(confirm.content or {}).get('ok')}"

        @server.prompt()
        async def plan(city: str, ctx: Context) -> str:
            self.runs["plan"] += 1
            answer = await ctx.elicit("Which season?", {"type": "object", "properties": {"s": {"type": "string"}}})
            return f"Plan {city} in {(answer.content or {}).get('s')}"

    def client(self) -> Client:
        return Client(self.server, protocol_version="2026-07-28", capabilities={"elicitation": {}})


def accept(**content: Any) -> JSONObject:
    return {"action": "accept", "content": content}


async def first_round(client: Client) -> tuple[JSONObject, JSONObject]:
    """Round 1 of ``book``: (the request's params, its InputRequiredResult)."""
    params = client.with_meta({"name": "book", "arguments": {"city": "Oslo", "nights": 2}})
    response = await client.request_raw("tools/call", params)
    result: JSONObject = response["result"]
    assert result["resultType"] == "input_required"
    assert list(result["inputRequests"]) == ["elicitation-1"]
    assert isinstance(result["requestState"], str)
    return params, result


@pytest.mark.spec(f"{MRTR}#basic-workflow")
async def test_a_two_round_exchange_completes_with_answers_carried_in_the_sealed_state() -> None:
    booking = Booking()
    async with booking.client() as client:
        params, first = await first_round(client)
        second = (await client.request_raw("tools/call", {
            **params, "inputResponses": {"elicitation-1": accept(dates="May")},
            "requestState": first["requestState"]}))["result"]
        assert second["resultType"] == "input_required"
        assert list(second["inputRequests"]) == ["elicitation-2"]
        assert second["requestState"] != first["requestState"]
        # The last round brings only the last answer: the first one comes back from the sealed state.
        done = (await client.request_raw("tools/call", {
            **params, "inputResponses": {"elicitation-2": accept(ok=True)},
            "requestState": second["requestState"]}))["result"]
    assert done["resultType"] == "complete"
    assert done["content"][0]["text"] == "Oslo x2: May ok=True"
    assert booking.runs["book"] == 3


def _tampered(token: str) -> str:
    return token + "-TAMPERED"


def _flipped(token: str) -> str:
    middle = len(token) // 2
    return token[:middle] + ALPHABET[(ALPHABET.index(token[middle]) + 1) % len(ALPHABET)] + token[middle + 1:]


@pytest.mark.parametrize(("alter", "why"), [
    pytest.param(_tampered, "", id="tampered"),
    pytest.param(_flipped, "", id="one-character-flipped"),
    pytest.param(lambda t: t[:-1], ISSUED_HERE, id="truncated"),
    pytest.param(lambda t: "not-a-state", ISSUED_HERE, id="garbage"),
    pytest.param(lambda t: 12345, ISSUED_HERE, id="not-a-string"),
    pytest.param(lambda t: seal(RequestStateSealer([OTHER_KEY]), principal=""), ISSUED_HERE, id="another-servers-key"),
])
async def test_a_retry_with_an_altered_state_is_refused_before_the_handler_runs(alter: Any, why: str) -> None:
    booking = Booking()
    async with booking.client() as client:
        params, first = await first_round(client)
        assert booking.runs["book"] == 1
        retry = {**params, "inputResponses": {"elicitation-1": accept(dates="May")},
                 "requestState": alter(first["requestState"])}
        response = await client.request_raw("tools/call", retry, id="retry-1")
    assert response["id"] == "retry-1"
    error = response["error"]
    assert error["code"] == INVALID_PARAMS
    assert error["message"].startswith("Invalid requestState: ")
    assert why in error["message"]
    assert booking.runs["book"] == 1  # refused before the handler ran again


async def test_an_expired_state_is_refused_before_the_handler_runs() -> None:
    booking = Booking()
    clock = FakeClock(5_000.0)
    booking.server.runtime.request_states = RequestStateSealer([KEY], ttl=30, clock=clock)
    async with booking.client() as client:
        params, first = await first_round(client)
        clock.advance(31)
        response = await client.request_raw("tools/call", {
            **params, "inputResponses": {"elicitation-1": accept(dates="May")}, "requestState": first["requestState"]})
    assert response["error"]["code"] == INVALID_PARAMS
    assert "expired" in response["error"]["message"]
    assert booking.runs["book"] == 1


ALICE = Principal("https://issuer.test", "alice")


async def test_a_state_presented_by_another_principal_is_refused_before_the_handler_runs() -> None:
    booking = Booking()
    async with booking.client() as client:
        client.principal = ALICE
        params, first = await first_round(client)
        retry = {**params, "inputResponses": {"elicitation-1": accept(dates="May")},
                 "requestState": first["requestState"]}
        client.principal = Principal("https://issuer.test", "mallory")
        stolen = await client.request_raw("tools/call", retry)
        assert stolen["error"]["code"] == INVALID_PARAMS
        assert "another principal" in stolen["error"]["message"]
        assert booking.runs["book"] == 1
        client.principal = ALICE  # the owner can still use it
        owned = await client.request_raw("tools/call", retry)
    assert owned["result"]["resultType"] == "input_required"
    assert list(owned["result"]["inputRequests"]) == ["elicitation-2"]
    assert booking.runs["book"] == 2


@pytest.mark.parametrize(("method", "params", "runs"), [
    pytest.param("prompts/get", {"name": "plan", "arguments": {"city": "Oslo"}}, "plan", id="another-method"),
    pytest.param("tools/call", {"name": "book", "arguments": {"city": "Bergen", "nights": 2}}, "book",
                 id="other-arguments"),
    pytest.param("tools/call", {"name": "book", "arguments": {"city": "Oslo", "nights": 9}}, "book",
                 id="other-argument-value"),
])
async def test_a_state_replayed_on_another_request_is_refused_before_the_handler_runs(
        method: str, params: JSONObject, runs: str) -> None:
    booking = Booking()
    async with booking.client() as client:
        _, first = await first_round(client)
        before = dict(booking.runs)
        response = await client.request_raw(method, client.with_meta({
            **params, "inputResponses": {"elicitation-1": accept(dates="May")}, "requestState": first["requestState"]}))
    assert response["error"]["code"] == INVALID_PARAMS
    assert "issued for another request" in response["error"]["message"]
    assert booking.runs == before


async def test_another_server_holding_the_same_keys_finishes_the_exchange() -> None:
    """What the replicas behind a load balancer rely on (across real processes in tests/e2e)."""
    first_server, second_server = Booking([NEW_KEY, KEY]), Booking([KEY])
    async with first_server.client() as first_client, second_server.client() as second_client:
        params, first = await first_round(first_client)
        # The second server only opens with KEY; the first sealed with NEW_KEY: refused.
        refused_there = await second_client.request_raw("tools/call", {
            **params, "inputResponses": {"elicitation-1": accept(dates="May")}, "requestState": first["requestState"]})
        assert refused_there["error"]["code"] == INVALID_PARAMS
        # Sealed with KEY (the first server's second key) instead, the second server takes it.
        first_server.server.runtime.request_states = RequestStateSealer([KEY])
        params, first = await first_round(first_client)
        second = await second_client.request_raw("tools/call", {
            **params, "inputResponses": {"elicitation-1": accept(dates="June")}, "requestState": first["requestState"]})
    assert list(second["result"]["inputRequests"]) == ["elicitation-2"]
