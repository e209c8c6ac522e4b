"""Sealed ``requestState`` for multi round-trip requests (stateless era).

``requestState`` travels through the client, so it is attacker-controlled. The server
seals what it needs (the answers gathered in earlier rounds and the handler's own state)
with AES-GCM, together with what binds it to one exchange: the principal, the method, a
digest of the request's parameters and an expiry. Any process holding one of the keys
can open it, so a retry may land on any replica; the first key seals, all of them open,
which is how keys rotate. The ciphers are made (and ``cryptography`` imported) when the first state is
sealed or opened: most servers never do, and none needs to before answering ``initialize``.
"""

from __future__ import annotations

import base64
import hashlib
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from wiremcp.errors import InvalidParams
from wiremcp.types import JSONObject

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

_NONCE = 12
_KEY_ID = 4
_EXCLUDED = ("_meta", "inputResponses", "requestState")


class RequestStateRejected(InvalidParams):
    """A ``requestState`` that fails verification: tampered, expired, or bound to another exchange."""

    def __init__(self, why: str) -> None:
        super().__init__(f"Invalid requestState: {why}")


def params_digest(method: str, params: JSONObject) -> str:
    """What identifies the originating request: its method and parameters (less the MRTR fields)."""
    salient = {k: v for k, v in params.items() if k not in _EXCLUDED}
    raw = method.encode() + b"\0" + orjson.dumps(salient, option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(raw).hexdigest()


@dataclass(slots=True)
class OpenedState:
    answers: JSONObject
    """Input responses gathered in earlier rounds, by key."""
    app_state: str | None
    """The handler's own ``request_state``, as it gave it."""


_KEY_SIZES = (16, 24, 32)
"""AES-128, AES-192 or AES-256."""


def decode_key(text: str) -> bytes:
    raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if len(raw) not in _KEY_SIZES:
        raise ValueError("a requestState key must be 16, 24 or 32 bytes (base64)")
    return raw


class _Ciphers:
    """AES-GCM with each key of a set, by key id; and the error a forged or damaged state raises."""

    __slots__ = ("by_id", "invalid")

    def __init__(self, keys: Sequence[bytes]) -> None:
        from cryptography.exceptions import InvalidTag
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        self.by_id: dict[bytes, AESGCM] = {_key_id(k): AESGCM(k) for k in keys}
        self.invalid: type[Exception] = InvalidTag


def _key_id(key: bytes) -> bytes:
    return hashlib.sha256(key).digest()[:_KEY_ID]


class RequestStateSealer:
    """Seals and opens ``requestState`` with a rotating key set (the first key seals)."""

    def __init__(self, keys: Sequence[bytes] | None = None, *, ttl: float = 600.0,
                 clock: Callable[[], float] = time.time) -> None:
        self.ttl = ttl
        self._clock = clock
        self.use_keys(list(keys or [os.urandom(32)]))  # a random AES-256 key (AESGCM.generate_key's)

    def use_keys(self, keys: Sequence[bytes]) -> None:
        """Seal with the first of ``keys`` and open with any of them from now on (replicas agreeing on a
        shared key at startup)."""
        if not keys or any(len(k) not in _KEY_SIZES for k in keys):
            raise ValueError("requestState keys must be 16, 24 or 32 bytes")
        self._keys = list(keys)
        self._sealing_id = _key_id(keys[0])
        self._made: _Ciphers | None = None

    def _ciphers(self) -> _Ciphers:
        """The ciphers of the keys in use, made once (the first state sealed or opened)."""
        made = self._made
        if made is None:
            made = self._made = _Ciphers(self._keys)
        return made

    @classmethod
    def from_strings(cls, keys: Sequence[str], *, ttl: float = 600.0) -> RequestStateSealer:
        return cls([decode_key(k) for k in keys] or None, ttl=ttl)

    def seal(self, *, owner: str, method: str, params: JSONObject, answers: JSONObject,
             app_state: str | None) -> str:
        payload: dict[str, Any] = {"p": owner, "d": params_digest(method, params),
                                   "e": int(self._clock() + self.ttl), "a": answers}
        if app_state is not None:
            payload["s"] = app_state
        nonce = os.urandom(_NONCE)
        sealed = self._ciphers().by_id[self._sealing_id].encrypt(nonce, orjson.dumps(payload), self._sealing_id)
        return base64.urlsafe_b64encode(self._sealing_id + nonce + sealed).decode().rstrip("=")

    def open(self, token: object, *, owner: str, method: str, params: JSONObject) -> OpenedState:
        if not isinstance(token, str) or not token or len(token) > 1 << 20:
            raise RequestStateRejected("not a state this server issued")
        try:
            raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        except (ValueError, TypeError):
            raise RequestStateRejected("not a state this server issued") from None
        if base64.urlsafe_b64encode(raw).decode().rstrip("=") != token:  # the decoder skips stray characters
            raise RequestStateRejected("not a state this server issued")
        key_id, nonce, sealed = raw[:_KEY_ID], raw[_KEY_ID:_KEY_ID + _NONCE], raw[_KEY_ID + _NONCE:]
        ciphers = self._ciphers()
        aead = ciphers.by_id.get(key_id)
        if aead is None or len(nonce) != _NONCE:
            raise RequestStateRejected("not a state this server issued")
        try:
            payload = orjson.loads(aead.decrypt(nonce, sealed, key_id))
        except (ciphers.invalid, orjson.JSONDecodeError, ValueError):
            raise RequestStateRejected("it failed verification (tampered or not issued here)") from None
        if not isinstance(payload, dict):
            raise RequestStateRejected("malformed")
        if payload.get("e", 0) < self._clock():
            raise RequestStateRejected("it has expired; send the request again without it")
        if payload.get("p") != owner:
            raise RequestStateRejected("it was issued to another principal")
        if payload.get("d") != params_digest(method, params):
            raise RequestStateRejected("it was issued for another request (method or parameters differ)")
        answers = payload.get("a")
        app_state = payload.get("s")
        return OpenedState(answers if isinstance(answers, dict) else {},
                           app_state if isinstance(app_state, str) else None)
