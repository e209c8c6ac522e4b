"""The ``TokenVerifier`` interface, and a static verifier for development and tests."""

from __future__ import annotations

import hmac
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping

from auth.principal import Principal


class InvalidToken(Exception):
    """The token is not acceptable (malformed, expired, revoked, wrong issuer or audience, ...).

    The message is for logs; clients only ever see ``error="invalid_token"``."""


class TokenVerifier(ABC):
    """Turns a bearer token into a ``Principal``, or raises ``InvalidToken``."""

    @abstractmethod
    async def verify(self, token: str) -> Principal: ...

    async def aclose(self) -> None:  # noqa: B027 - optional hook, nothing to release by default
        """Release what the verifier holds (HTTP clients)."""


class StaticTokenVerifier(TokenVerifier):
    """Fixed tokens, each standing for a principal: for development and tests, never production."""

    def __init__(self, tokens: Mapping[str, Principal]) -> None:
        self._tokens = dict(tokens)

    @classmethod
    def from_pairs(cls, pairs: Iterable[str], *, issuer: str = "static") -> StaticTokenVerifier:
        """``token=subject[:scope scope...]`` strings (the ``MCPWIRE_AUTH_STATIC_TOKENS`` format)."""
        tokens: dict[str, Principal] = {}
        for pair in pairs:
            token, _, rest = pair.partition("=")
            subject, _, scopes = rest.partition(":")
            if not token or not subject:
                raise ValueError("static tokens are written token=subject[:scope scope ...]")
            tokens[token] = Principal(issuer, subject, scopes=frozenset(scopes.split()))
        return cls(tokens)

    async def verify(self, token: str) -> Principal:
        for known, principal in self._tokens.items():
            if hmac.compare_digest(known.encode(), token.encode()):
                if principal.expires_at is not None and principal.expires_at < time.time():
                    raise InvalidToken("the token has expired")
                return principal
        raise InvalidToken("unknown token")
