"""What the OAuth endpoints read and answer: form bodies (``application/x-www-form-urlencoded``, the one encoding
OAuth uses, read without ``python-multipart``), OAuth error responses, PKCE, and redirects back to a client."""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from urllib.parse import parse_qsl, unquote, urlencode

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response

from wiremcp.auth.oauth.sealing import b64url

MAX_FORM_BYTES = 16 * 1024
VERIFIER = re.compile(r"[A-Za-z0-9\-._~]{43,128}")
"""An RFC 7636 code verifier."""
CHALLENGE = re.compile(r"[A-Za-z0-9\-_]{43}")
"""An S256 code challenge: the base64url of a SHA-256, unpadded."""
NO_STORE = {"cache-control": "no-store", "pragma": "no-cache"}


class FormError(Exception):
    """The request's body is not a form this endpoint reads."""


async def read_form(request: Request) -> dict[str, str]:
    """The form's fields; a field given twice is refused (RFC 6749, 3.1)."""
    if request.headers.get("content-type", "").split(";")[0].strip().lower() != "application/x-www-form-urlencoded":
        raise FormError("the body is application/x-www-form-urlencoded")
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            raise FormError(f"the body is larger than {MAX_FORM_BYTES} bytes")
    try:
        pairs = parse_qsl(body.decode(), keep_blank_values=True, strict_parsing=False)
    except UnicodeDecodeError:
        raise FormError("the body is not UTF-8") from None
    fields: dict[str, str] = {}
    for name, value in pairs:
        if name in fields:
            raise FormError(f"{name} is given twice")
        fields[name] = value
    return fields


def oauth_error(error: str, description: str, status: int = 400, headers: dict[str, str] | None = None) -> Response:
    return JSONResponse({"error": error, "error_description": description}, status_code=status,
                        headers={**NO_STORE, **(headers or {})})


def pkce_matches(verifier: str | None, challenge: str) -> bool:
    """Whether ``verifier`` is an RFC 7636 verifier whose S256 is ``challenge``."""
    if verifier is None or not VERIFIER.fullmatch(verifier):
        return False
    return b64url(hashlib.sha256(verifier.encode()).digest()) == challenge


def s256(verifier: str) -> str:
    return b64url(hashlib.sha256(verifier.encode()).digest())


def redirect_back(redirect_uri: str, params: dict[str, str]) -> Response:
    """The browser sent back to the client's redirect URI with ``params`` added to its query."""
    separator = "&" if "?" in redirect_uri else "?"
    return RedirectResponse(f"{redirect_uri}{separator}{urlencode(params)}", status_code=302, headers=NO_STORE)


def basic_credentials(request: Request) -> tuple[str, str] | None:
    """The client id and secret of an ``Authorization: Basic`` header (RFC 6749 2.3.1: each form-encoded)."""
    header = request.headers.get("authorization", "")
    kind, _, value = header.partition(" ")
    if kind.lower() != "basic" or not value:
        return None
    try:
        decoded = base64.b64decode(value.strip(), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return None
    client_id, colon, secret = decoded.partition(":")
    return (unquote(client_id.replace("+", " ")), unquote(secret.replace("+", " "))) if colon else None
