"""The identity provider as the OAuth server sees it: found by its discovery document, sent the user with PKCE
and a nonce, its code exchanged, its ID token checked (issuer, audience, nonce, expiry), its user read."""

from __future__ import annotations

import base64
import json
import time
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.support.oauth_flow import Provider
from wiremcp.auth.oauth.upstream import Discovery, Upstream, UpstreamError, UpstreamTokens

pytestmark = pytest.mark.timeout(60)



def _unsigned(claims: dict[str, object]) -> str:
    def part(value: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'RS256'})}.{part(claims)}.c2ln"


OIDC = Upstream(client_id="us", client_secret="s", authorize_url="https://idp.example.com/authorize?tenant=t",
                token_url="https://idp.example.com/token", issuer="https://idp.example.com")


async def test_discovery_reads_the_providers_endpoints(oauth_provider: Provider) -> None:
    found = await Discovery(oauth_provider.idp.discovery_url, client_id="c", client_secret="s").resolve()
    assert found.issuer == oauth_provider.idp.issuer
    assert found.token_url == oauth_provider.idp.token_url
    assert found.userinfo_url == oauth_provider.idp.userinfo_url
    with pytest.raises(UpstreamError, match="could not be read: HTTPStatusError"):
        await Upstream.discover(oauth_provider.idp.origin + "/nothing", client_id="c", client_secret="s")


def test_the_sign_in_url_keeps_the_providers_query_and_adds_pkce_state_and_nonce() -> None:
    url = OIDC.sign_in_url(redirect_uri="https://mcp/cb", state="st", code_challenge="c" * 43, nonce="n1")
    query = {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
    assert query["tenant"] == "t"
    assert (query["state"], query["nonce"], query["code_challenge_method"]) == ("st", "n1", "S256")
    assert query["scope"] == "openid email profile"


@pytest.mark.parametrize(("claims", "why"), [
    ({"iss": "https://evil.example.com"}, "another issuer"),
    ({"aud": "someone-else"}, "another client"),
    ({"nonce": "replayed"}, "nonce is not this sign-in's"),
    ({"exp": time.time() - 3600}, "has expired"),
])
async def test_an_id_token_that_is_not_for_this_sign_in_is_refused(claims: dict[str, object], why: str) -> None:
    token = _unsigned({"iss": OIDC.issuer, "aud": ["us"], "sub": "u1", "nonce": "n1", "exp": time.time() + 60,
                       **claims})
    with pytest.raises(UpstreamError, match=why):
        await OIDC.identity(UpstreamTokens("at", id_token=token), nonce="n1")
    with pytest.raises(UpstreamError, match="no ID token"):
        await OIDC.identity(UpstreamTokens("at"), nonce="n1")
    with pytest.raises(UpstreamError, match="not a JWT"):
        await OIDC.identity(UpstreamTokens("at", id_token="x.y"), nonce="n1")


async def test_a_code_that_is_no_code_is_the_providers_refusal(oauth_provider: Provider) -> None:
    found = await Discovery(oauth_provider.idp.discovery_url, client_id=oauth_provider.idp.client_id,
                            client_secret=oauth_provider.idp.client_secret).resolve()
    with pytest.raises(UpstreamError, match="refused the code \\(invalid_grant\\)"):
        await found.exchange("made-up", redirect_uri=f"{oauth_provider.base}/oauth/callback", code_verifier="v" * 43)
    with pytest.raises(UpstreamError, match="no refresh token"):
        await found.refresh(UpstreamTokens("at"))


def test_tokens_round_trip_through_their_record() -> None:
    tokens = UpstreamTokens("at", "rt", 123.0, "idt", "openid")
    assert UpstreamTokens.from_record(tokens.to_record()) == tokens
