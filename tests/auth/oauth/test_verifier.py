"""The resource server's check of the OAuth server's access tokens: its own keys, its issuer, this resource, not
expired, an access token (not an ID token or anything else signed with the keys), its family not revoked."""

from __future__ import annotations

import time

import pytest
from joserfc import jwt

from wiremcp.auth.oauth.keys import SigningKeys
from wiremcp.auth.oauth.sealing import Seal
from wiremcp.auth.oauth.tokens import Grant, Tokens
from wiremcp.auth.oauth.verifier import OAuthVerifier
from wiremcp.auth.verifier import InvalidToken
from wiremcp.grant_store import InMemoryGrantStore

ISSUER, RESOURCE = "https://mcp.example.com", "https://mcp.example.com/mcp"


async def _setup() -> tuple[Tokens, OAuthVerifier, str]:
    store = InMemoryGrantStore()
    tokens = Tokens(store, SigningKeys(store, Seal.generated()), issuer=ISSUER)
    code = await tokens.code(Grant("c", "ada", ("notes:read",), RESOURCE), redirect_uri="r", code_challenge="x")
    issued = await tokens.redeem(code, client_id="c", redirect_uri="r", check_verifier=lambda _: True)
    return tokens, OAuthVerifier(tokens, audience=RESOURCE), issued.access_token


async def _signed(tokens: Tokens, header: dict[str, str], **claims: object) -> str:
    key = await tokens.keys.signing()
    now = int(time.time())
    base = {"iss": ISSUER, "sub": "ada", "aud": RESOURCE, "exp": now + 60, "iat": now, "fam": "nope"}
    return jwt.encode({"alg": "ES256", "kid": key.kid, **header}, {**base, **claims}, key.key)


async def test_an_access_token_names_its_caller() -> None:
    _, verifier, token = await _setup()
    principal = await verifier.verify(token)
    assert (principal.issuer, principal.subject, principal.client_id) == (ISSUER, "ada", "c")
    assert principal.scopes == frozenset({"notes:read"})


async def test_what_is_not_a_live_access_token_for_this_resource_is_refused() -> None:
    tokens, verifier, token = await _setup()
    family = jwt.decode(token, await tokens.keys.key_set()).claims["fam"]
    cases = {
        "not a JWT": "garbage",
        "no at+jwt type": await _signed(tokens, {}, fam=family),
        "another issuer": await _signed(tokens, {"typ": "at+jwt"}, iss="https://evil.example.com", fam=family),
        "another resource": await _signed(tokens, {"typ": "at+jwt"}, aud="https://other.example.com/mcp", fam=family),
        "expired": await _signed(tokens, {"typ": "at+jwt"}, exp=int(time.time()) - 3600, fam=family),
        "no family": await _signed(tokens, {"typ": "at+jwt"}, fam="unknown"),
    }
    for why, bad in cases.items():
        with pytest.raises(InvalidToken):
            await verifier.verify(bad)
        print("refused:", why)
    foreign = Tokens(InMemoryGrantStore(), SigningKeys(InMemoryGrantStore(), Seal.generated()), issuer=ISSUER)
    with pytest.raises(InvalidToken):
        await verifier.verify(await _signed(foreign, {"typ": "at+jwt"}, fam=family))  # another server's keys
    await tokens.revoke_family(family)
    with pytest.raises(InvalidToken, match="revoked"):
        await verifier.verify(token)
