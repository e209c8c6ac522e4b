"""The resource server's side of the OAuth server: its access tokens verified with its own keys, read from the
shared store (no network call), and refused once their family is revoked (a code or a refresh token used twice,
a revocation): at once on the replica that revoked it, within ``tokens.LIVE_CACHE_SECONDS`` on the others."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from joserfc import jwt
from joserfc.errors import JoseError

from wiremcp.auth.jwt_verifier import jws_header, principal_of
from wiremcp.auth.oauth.keys import SealedElsewhere
from wiremcp.auth.oauth.tokens import Tokens
from wiremcp.auth.verifier import InvalidToken, TokenVerifier, VerifierUnavailable
from wiremcp.principal import Principal
from wiremcp.unavailable import StoreUnavailable

log = logging.getLogger("wiremcp.oauth")


class OAuthVerifier(TokenVerifier):
    """Verifies the access tokens ``tokens`` issues, for ``audience``."""

    def __init__(self, tokens: Tokens, *, audience: str, leeway: float = 30.0,
                 clock: Callable[[], float] = time.time) -> None:
        self.tokens = tokens
        self.audience = audience
        self.leeway = leeway
        self._clock = clock

    async def verify(self, token: str) -> Principal:
        jws_header(token, ["ES256"])
        try:
            return await self._verified(token)
        except StoreUnavailable:
            raise VerifierUnavailable("the OAuth server's store cannot be reached", retry_after=1.0) from None
        except SealedElsewhere as exc:
            log.error("%s", exc)
            raise VerifierUnavailable(str(exc), retry_after=1.0) from None

    async def _verified(self, token: str) -> Principal:
        keys = await self.tokens.keys.key_set()
        try:
            decoded = jwt.decode(token, keys, algorithms=["ES256"])
        except (JoseError, ValueError) as exc:
            raise InvalidToken(f"the token does not verify: {exc}") from None
        if decoded.header.get("typ") != "at+jwt":
            raise InvalidToken("the token is not an access token")
        now = self._clock()
        principal = principal_of(decoded.claims, issuer=self.tokens.issuer, audience=self.audience, now=now,
                                 leeway=self.leeway)
        family = decoded.claims.get("fam")
        if not isinstance(family, str) or not await self.tokens.family_live(family):
            raise InvalidToken("the token has been revoked")
        return principal
