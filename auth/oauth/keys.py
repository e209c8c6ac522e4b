"""The keys the OAuth server signs its access tokens with: one ring, shared by every replica through the store.

The ring is one record: the signing keys (ES256, P-256), newest first, each sealed with the server's secret
(the store never holds a private key in the clear). The newest signs; the others still verify the tokens they
signed until those have expired. A replica finds the newest key older than ``rotate_after`` and puts a new one
first, by compare-and-set: of replicas racing to rotate, one wins and the others read its ring.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import orjson
from joserfc import jwk

from wiremcp.auth.oauth.sealing import InvalidSeal, Seal
from wiremcp.grant_store import GrantStore
from wiremcp.types import JSONObject

RING = ("key", "ring")
"""The ring's kind and key in the store."""
PURPOSE = "signing key"
CACHE_SECONDS = 5.0
"""How long a replica signs with the ring it read before reading it again."""


@dataclass(frozen=True, slots=True)
class SigningKey:
    kid: str
    created: float
    key: jwk.ECKey


class SealedElsewhere(Exception):
    """The ring in the store was sealed with another secret: the replicas were given different
    ``WIREMCP_OAUTH_SECRET`` values (or it changed), and this one can neither sign nor verify."""


class SigningKeys:
    """The ring, read from the store (and cached for a few seconds), rotated when its newest key is old."""

    def __init__(self, store: GrantStore, seal: Seal, *, rotate_after: float = 7 * 86400.0,
                 verify_for: float = 86400.0, clock: Callable[[], float] = time.time) -> None:
        if verify_for <= 0 or rotate_after <= 0:
            raise ValueError("rotate_after and verify_for are more than 0 seconds")
        self.store = store
        self.seal = seal
        self.rotate_after = rotate_after
        self.verify_for = verify_for
        """How long a key that no longer signs still verifies: at least the longest access token's life."""
        self._clock = clock
        self._cached: tuple[float, list[SigningKey]] | None = None

    @property
    def ttl(self) -> float:
        """How long the ring is kept without a rotation: a key's whole life, and a margin."""
        return self.rotate_after + self.verify_for + 86400.0

    async def ring(self) -> list[SigningKey]:
        """The keys, newest first: rotated first if the newest is older than ``rotate_after``."""
        now = self._clock()
        if self._cached is not None and now - self._cached[0] < CACHE_SECONDS:
            return self._cached[1]
        for _ in range(5):  # a lost compare-and-set reads the winner's ring
            record = await self.store.get(*RING)
            keys = self._open(record) if record else []
            if keys and now - keys[0].created < self.rotate_after:
                break
            fresh = [self._new(now), *(k for k in keys if now - k.created < self.rotate_after + self.verify_for)]
            written = self._record(fresh)
            if record is None:
                if await self.store.add(*RING, written, self.ttl):
                    keys = fresh
                    break
            elif await self.store.replace(*RING, record, written, self.ttl):
                keys = fresh
                break
        else:
            raise RuntimeError("the signing key ring kept changing under this replica")
        self._cached = (now, keys)
        return keys

    async def signing(self) -> SigningKey:
        return (await self.ring())[0]

    async def key_set(self) -> jwk.KeySet:
        """Every key that may verify a token now."""
        return jwk.KeySet([k.key for k in await self.ring()])

    async def jwks(self) -> JSONObject:
        """The public keys, as ``/oauth/jwks`` serves them."""
        return {"keys": [{**k.key.as_dict(private=False), "kid": k.kid, "use": "sig", "alg": "ES256"}
                         for k in await self.ring()]}

    def _new(self, now: float) -> SigningKey:
        key = jwk.ECKey.generate_key("P-256", private=True)
        kid = key.thumbprint()
        return SigningKey(kid, now, jwk.ECKey.import_key(key.as_dict(private=True), {"kid": kid}))

    def _record(self, keys: list[SigningKey]) -> JSONObject:
        return {"keys": [{"kid": k.kid, "created": k.created,
                          "sealed": self.seal.seal(orjson.dumps(k.key.as_dict(private=True)), PURPOSE)}
                         for k in keys]}

    def _open(self, record: JSONObject) -> list[SigningKey]:
        out = []
        for entry in record.get("keys", []):
            try:
                private = orjson.loads(self.seal.open(entry["sealed"], PURPOSE))
            except InvalidSeal:
                raise SealedElsewhere("the signing keys in the store were sealed with another secret: give every "
                                      "replica the same WIREMCP_OAUTH_SECRET") from None
            out.append(SigningKey(entry["kid"], float(entry["created"]),
                                  jwk.ECKey.import_key(private, {"kid": entry["kid"]})))
        return out
