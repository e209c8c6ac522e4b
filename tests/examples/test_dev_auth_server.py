"""``python -m examples.dev_auth_server`` on the base install (``pip install -e .``, no test extra): run in a
subprocess where ``python-multipart`` cannot be imported, and driven over real HTTP the way the README
does it (register a client, then client credentials), plus the authorization code flow, introspection,
revocation and bodies that are not OAuth forms.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from tests.support.http import READ_BOUND, START_BOUND, _wait_until_accepting, free_port, stop_process

ROOT = Path(__file__).resolve().parents[2]
RESOURCE = "http://127.0.0.1:8000/mcp"

WITHOUT_MULTIPART = """
import importlib.abc, runpy, sys

class NoMultipart(importlib.abc.MetaPathFinder):
    '''The base install: python-multipart is not there.'''
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in ("multipart", "python_multipart"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

for loaded in [m for m in sys.modules if m.partition(".")[0] in ("multipart", "python_multipart")]:
    del sys.modules[loaded]
sys.meta_path.insert(0, NoMultipart())
import starlette.formparsers
assert starlette.formparsers.multipart is None, "the blocker did not take"
runpy.run_module("examples.dev_auth_server", run_name="__main__", alter_sys=True)
"""


@pytest.fixture(scope="module")
def issuer() -> Iterator[str]:
    """The dev authorization server's base URL, served by a process that cannot import multipart."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    with tempfile.TemporaryFile() as log:
        for _ in range(3):  # another process may take the free port between probe and bind
            port = free_port()
            proc = subprocess.Popen([sys.executable, "-c", WITHOUT_MULTIPART, "--host", "127.0.0.1",
                                     "--port", str(port)], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
            try:
                if _wait_until_accepting(proc, "127.0.0.1", port, time.monotonic() + START_BOUND):
                    yield f"http://127.0.0.1:{port}"
                    break
            finally:
                stop_process(proc)
        else:
            log.seek(0)
            raise RuntimeError("the dev authorization server did not start:\n" + log.read().decode())
        log.seek(0)
        output = log.read().decode()
    assert "Traceback" not in output, output


@pytest.fixture
def http(issuer: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=issuer, timeout=READ_BOUND) as client:
        yield client


def _register(http: httpx.Client, **fields: Any) -> dict[str, Any]:
    answer = http.post("/register", json=fields)
    assert answer.status_code == 201, answer.text
    client: dict[str, Any] = answer.json()
    return client


def _claims(token: str) -> dict[str, Any]:
    payload = token.split(".")[1]
    claims: dict[str, Any] = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    return claims


def test_client_credentials_token_without_python_multipart(http: httpx.Client) -> None:
    client = _register(http, grant_types=["client_credentials"])
    auth = (client["client_id"], client["client_secret"])
    answer = http.post("/token", auth=auth, data={"grant_type": "client_credentials", "resource": RESOURCE,
                                                  "scope": "mcp:tools"})
    assert answer.status_code == 200, answer.text
    tokens = answer.json()
    assert tokens["token_type"] == "Bearer"
    assert tokens["scope"] == "mcp:tools"
    claims = _claims(tokens["access_token"])
    assert (claims["sub"], claims["aud"], claims["scope"]) == (client["client_id"], RESOURCE, "mcp:tools")

    introspected = http.post("/introspect", auth=auth, data={"token": tokens["access_token"]})
    assert introspected.status_code == 200, introspected.text
    assert introspected.json()["active"] is True
    assert http.post("/revoke", auth=auth, data={"token": tokens["access_token"]}).status_code == 200
    assert http.post("/introspect", auth=auth, data={"token": tokens["access_token"]}).json() == {"active": False}


def test_client_secret_post_authenticates_from_the_form(http: httpx.Client) -> None:
    client = _register(http, grant_types=["client_credentials"])
    answer = http.post("/token", data={"grant_type": "client_credentials", "client_id": client["client_id"],
                                       "client_secret": client["client_secret"]})
    assert answer.status_code == 200, answer.text
    wrong = http.post("/token", data={"grant_type": "client_credentials", "client_id": client["client_id"],
                                      "client_secret": "not-it"})
    assert (wrong.status_code, wrong.json()["error"]) == (401, "invalid_client")


def test_authorization_code_with_pkce_and_refresh_without_python_multipart(http: httpx.Client) -> None:
    redirect_uri = "http://127.0.0.1:33418/callback"
    client = _register(http, redirect_uris=[redirect_uri], token_endpoint_auth_method="none")
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    redirect = http.get("/authorize", params={
        "response_type": "code", "client_id": client["client_id"], "redirect_uri": redirect_uri,
        "code_challenge": challenge, "code_challenge_method": "S256", "state": "s 1", "resource": RESOURCE})
    assert redirect.status_code == 302, redirect.text
    query = parse_qs(urlsplit(redirect.headers["location"]).query)
    assert query["state"] == ["s 1"]
    answer = http.post("/token", data={"grant_type": "authorization_code", "code": query["code"][0],
                                       "redirect_uri": redirect_uri, "code_verifier": verifier,
                                       "client_id": client["client_id"]})
    assert answer.status_code == 200, answer.text
    tokens = answer.json()
    assert _claims(tokens["access_token"])["aud"] == RESOURCE
    refreshed = http.post("/token", data={"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"],
                                          "client_id": client["client_id"]})
    assert refreshed.status_code == 200, refreshed.text
    assert refreshed.json()["access_token"] != tokens["access_token"]


@pytest.mark.parametrize("body", [
    pytest.param({"json": {"grant_type": "client_credentials"}}, id="json"),
    pytest.param({"files": {"grant_type": (None, "client_credentials")}}, id="multipart"),
    pytest.param({"content": b"grant_type=client_credentials&grant_type=refresh_token",
                  "headers": {"content-type": "application/x-www-form-urlencoded"}}, id="repeated-parameter"),
    pytest.param({"content": b"grant_type=client_credentials&scope=%ff",
                  "headers": {"content-type": "application/x-www-form-urlencoded"}}, id="not-utf-8"),
    pytest.param({"content": b"grant_type=client_credentials"}, id="no-content-type"),
])
@pytest.mark.parametrize("endpoint", ["/token", "/introspect", "/revoke"])
def test_a_body_that_is_not_an_oauth_form_is_an_invalid_request(http: httpx.Client, endpoint: str,
                                                                 body: dict[str, Any]) -> None:
    client = _register(http, grant_types=["client_credentials"])
    answer = http.post(endpoint, auth=(client["client_id"], client["client_secret"]), **body)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"] == "invalid_request"


def test_a_form_with_a_charset_is_accepted(http: httpx.Client) -> None:
    client = _register(http, grant_types=["client_credentials"])
    answer = http.post("/token", auth=(client["client_id"], client["client_secret"]),
                       content=b"grant_type=client_credentials&scope=mcp%3Aread+mcp%3Awrite",
                       headers={"content-type": "application/x-www-form-urlencoded; charset=UTF-8"})
    assert answer.status_code == 200, answer.text
    assert answer.json()["scope"] == "mcp:read mcp:write"
