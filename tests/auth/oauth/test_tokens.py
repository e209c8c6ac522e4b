"""Codes, access tokens and refresh token families: a code once, a refresh token once (a reuse revokes its family,
access tokens included), a narrower scope on refresh, never a wider one."""

from __future__ import annotations

import asyncio

import pytest
from joserfc import jwt

from wiremcp.auth.oauth.forms import pkce_matches, s256
from wiremcp.auth.oauth.keys import SigningKeys
from wiremcp.auth.oauth.sealing import Seal
from wiremcp.auth.oauth.tokens import Grant, GrantError, Tokens
from wiremcp.grant_store import InMemoryGrantStore

ISSUER = "https://mcp.example.com"
RESOURCE = "https://mcp.example.com/mcp"
VERIFIER = "a" * 43
GRANT = Grant("client-1", "ada", ("notes:read", "notes:write"), RESOURCE, {"email": "ada@example.com", "sub": "x"})


def _tokens() -> Tokens:
    store = InMemoryGrantStore()
    return Tokens(store, SigningKeys(store, Seal.generated()), issuer=ISSUER)


async def _redeemed(tokens: Tokens, code: str, **overrides: object) -> object:
    options: dict[str, object] = {"client_id": "client-1", "redirect_uri": "http://127.0.0.1:5000/cb",
                                  "check_verifier": lambda c: pkce_matches(VERIFIER, c), **overrides}
    return await tokens.redeem(code, **options)  # type: ignore[arg-type]


async def _issued_code(tokens: Tokens) -> str:
    return await tokens.code(GRANT, redirect_uri="http://127.0.0.1:5000/cb", code_challenge=s256(VERIFIER))


async def test_a_code_gives_an_access_token_for_the_resource_and_a_refresh_token() -> None:
    tokens = _tokens()
    issued = await tokens.redeem(await _issued_code(tokens), client_id="client-1",
                                 redirect_uri="http://127.0.0.1:5000/cb", check_verifier=lambda c: pkce_matches(VERIFIER, c))
    claims = jwt.decode(issued.access_token, await tokens.keys.key_set()).claims
    assert claims["aud"] == RESOURCE
    assert claims["iss"] == ISSUER
    assert claims["sub"] == "ada"
    assert claims["scope"] == "notes:read notes:write"
    assert claims["client_id"] == "client-1"
    assert claims["email"] == "ada@example.com"  # a user's claim is carried, but never replaces ours (sub)
    assert issued.to_response()["token_type"] == "Bearer"
    assert issued.expires_in == 300


@pytest.mark.parametrize(("overrides", "description"), [
    ({"client_id": "client-2"}, "issued to another client"),
    ({"redirect_uri": "http://127.0.0.1:5000/other"}, "redirect_uri is not the one"),
    ({"redirect_uri": None}, "redirect_uri is not the one"),
    ({"check_verifier": lambda c: pkce_matches("b" * 43, c)}, "code_verifier does not match"),
    ({"check_verifier": lambda c: pkce_matches(None, c)}, "code_verifier does not match"),
])
async def test_a_code_redeemed_wrongly_is_refused_and_spent(overrides: dict[str, object], description: str) -> None:
    tokens = _tokens()
    code = await _issued_code(tokens)
    with pytest.raises(GrantError, match=description) as refused:
        await _redeemed(tokens, code, **overrides)
    assert refused.value.error == "invalid_grant"
    with pytest.raises(GrantError, match="already used"):
        await _redeemed(tokens, code)  # a failed attempt spends it


async def test_a_code_used_twice_revokes_what_the_first_use_got() -> None:
    tokens = _tokens()
    code = await _issued_code(tokens)
    first = await _redeemed(tokens, code)
    assert not await tokens.family_revoked(first.refresh_token.partition(".")[0])  # type: ignore[attr-defined]
    with pytest.raises(GrantError, match="already used: the tokens issued for it are revoked"):
        await _redeemed(tokens, code)
    assert await tokens.family_revoked(first.refresh_token.partition(".")[0])  # type: ignore[attr-defined]
    with pytest.raises(GrantError, match="revoked"):
        await tokens.refresh(first.refresh_token, client_id="client-1")  # type: ignore[attr-defined]


async def test_of_two_redemptions_at_once_one_gets_the_tokens() -> None:
    tokens = _tokens()
    code = await _issued_code(tokens)
    outcomes = await asyncio.gather(*(_redeemed(tokens, code) for _ in range(10)), return_exceptions=True)
    assert sum(not isinstance(o, Exception) for o in outcomes) == 1


async def test_a_refresh_rotates_and_a_reused_refresh_token_revokes_the_family() -> None:
    tokens = _tokens()
    first = await _redeemed(tokens, await _issued_code(tokens))
    second = await tokens.refresh(first.refresh_token, client_id="client-1")  # type: ignore[attr-defined]
    third = await tokens.refresh(second.refresh_token, client_id="client-1")
    assert len({first.refresh_token, second.refresh_token, third.refresh_token}) == 3  # type: ignore[attr-defined]
    with pytest.raises(GrantError, match="already used: its tokens are revoked"):
        await tokens.refresh(second.refresh_token, client_id="client-1")  # the thief, or the victim: both lose
    with pytest.raises(GrantError, match="has been revoked"):
        await tokens.refresh(third.refresh_token, client_id="client-1")


async def test_a_refresh_may_narrow_the_scopes_never_widen_them_and_is_the_clients_own() -> None:
    tokens = _tokens()
    first = await _redeemed(tokens, await _issued_code(tokens))
    narrower = await tokens.refresh(first.refresh_token, client_id="client-1", scopes=("notes:read",))  # type: ignore[attr-defined]
    assert narrower.scope == "notes:read"
    with pytest.raises(GrantError) as wider:
        await tokens.refresh(narrower.refresh_token, client_id="client-1", scopes=("notes:read", "admin"))
    assert (wider.value.error, wider.value.description) == ("invalid_scope", "scopes not granted before: admin")
    other = await _redeemed(tokens, await _issued_code(tokens))
    with pytest.raises(GrantError, match="issued to another client"):
        await tokens.refresh(other.refresh_token, client_id="client-2")  # type: ignore[attr-defined]


async def test_unknown_refresh_tokens_are_invalid_grant() -> None:
    tokens = _tokens()
    for token in ("", "nothing", "fam.secret"):
        with pytest.raises(GrantError, match="unknown or has expired"):
            await tokens.refresh(token, client_id="client-1")
