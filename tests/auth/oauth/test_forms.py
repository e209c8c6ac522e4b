"""Reading OAuth forms, PKCE, redirects back and HTTP Basic client credentials."""

from __future__ import annotations

import base64
import hashlib

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from wiremcp.auth.oauth.forms import (
    FormError,
    basic_credentials,
    pkce_matches,
    read_form,
    redirect_back,
    s256,
)


async def _echo(request: Request) -> Response:
    try:
        return JSONResponse({"form": await read_form(request), "basic": basic_credentials(request)})
    except FormError as exc:
        return JSONResponse({"error": str(exc)}, status_code=400)


async def _post(content: bytes, content_type: str = "application/x-www-form-urlencoded",
                **headers: str) -> httpx.Response:
    transport = httpx.ASGITransport(app=Starlette(routes=[Route("/", _echo, methods=["POST"])]))
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
        return await http.post("/", content=content, headers={"content-type": content_type, **headers})


async def test_a_form_is_read_and_a_field_given_twice_or_another_encoding_is_refused() -> None:
    assert (await _post(b"a=1&b=x+y%21")).json()["form"] == {"a": "1", "b": "x y!"}
    assert (await _post(b"a=1&a=2")).json() == {"error": "a is given twice"}
    assert (await _post(b'{"a": 1}', "application/json")).json() == {
        "error": "the body is application/x-www-form-urlencoded"}
    assert "larger than" in (await _post(b"a=" + b"x" * 20_000)).json()["error"]


async def test_basic_credentials_are_form_decoded_and_anything_else_is_none() -> None:
    raw = base64.b64encode(b"my%3Aclient:s%2Becret").decode()
    assert (await _post(b"", authorization=f"Basic {raw}")).json()["basic"] == ["my:client", "s+ecret"]
    assert (await _post(b"", authorization="Basic !!!")).json()["basic"] is None
    assert (await _post(b"", authorization="Bearer abc")).json()["basic"] is None


def test_pkce_takes_the_verifier_of_its_challenge_only() -> None:
    verifier = "v" * 43
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    assert s256(verifier) == challenge
    assert pkce_matches(verifier, challenge)
    assert not pkce_matches("w" * 43, challenge)
    assert not pkce_matches(None, challenge)
    assert not pkce_matches("short", s256("short"))  # not an RFC 7636 verifier (43 to 128 characters)
    assert not pkce_matches(challenge, challenge)  # "plain" is not taken


@pytest.mark.parametrize(("uri", "expected"), [
    ("http://127.0.0.1:5000/cb", "http://127.0.0.1:5000/cb?code=c&state=s+1"),
    ("https://app.example.com/cb?tenant=a", "https://app.example.com/cb?tenant=a&code=c&state=s+1"),
])
def test_a_redirect_back_adds_its_parameters_to_the_query(uri: str, expected: str) -> None:
    response = redirect_back(uri, {"code": "c", "state": "s 1"})
    assert response.status_code == 302
    assert response.headers["location"] == expected
    assert response.headers["cache-control"] == "no-store"
