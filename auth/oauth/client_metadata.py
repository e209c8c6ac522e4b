"""Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document): an MCP client whose
``client_id`` is an https URL publishes its registration (its name, its redirect URIs, ...) at that URL, and
the authorization server fetches it there instead of keeping a registration of its own
(``wiremcp.auth.oauth.metadata_fetcher``).

- ``is_metadata_url``: whether a ``client_id`` is such a URL (https, a host, a path, no fragment, no user
  name or password, no dot segments); ``url_problem`` says which rule one breaks.
- ``ClientMetadata.validated``: the document as this authorization server accepts it: a public client
  (``token_endpoint_auth_method`` ``none``) of the authorization code flow whose ``client_id`` is the URL it
  was fetched from, exactly; anything else is an ``InvalidClientMetadata`` saying why in one sentence.

Every refusal is a ``ClientMetadataError`` whose message is safe to show the user: it names the rule the
document or its URL broke, never an exception's text.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any
from urllib.parse import urlsplit

PUBLIC_CLIENT = "none"
SHARED_SECRET_METHODS = frozenset({"client_secret_basic", "client_secret_post", "client_secret_jwt"})
RESPONSE_TYPES = frozenset({"code"})
REMOVED_GRANT_TYPES = frozenset({"implicit", "password"})
"""Grants OAuth 2.1 leaves out: a document asking for them is refused."""

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*")
_DOT_SEGMENTS = frozenset({".", "..", "%2e", "%2e%2e", ".%2e", "%2e."})



class ClientMetadataError(Exception):
    """The client's metadata document cannot be used. The message is one sentence, safe to show the user."""

    @property
    def reason(self) -> str:
        return str(self.args[0]) if self.args else ""


class InvalidClientMetadata(ClientMetadataError):
    """The document was fetched but is not one this authorization server accepts."""


# -- the client_id URL ------------------------------------------------------------------------------------
def url_problem(client_id: str) -> str | None:
    """Why ``client_id`` is not a Client ID Metadata Document URL (a sentence), or None when it is one."""
    if not client_id.lower().startswith("https://"):
        return "the client_id URL is not https"
    if any(c.isspace() or ord(c) < 0x20 or c in "\x7f\\" for c in client_id):
        return "the client_id URL contains whitespace, control characters or backslashes"
    if "#" in client_id:
        return "the client_id URL has a fragment"
    try:
        parts = urlsplit(client_id)
        parts.port  # noqa: B018 (a port that is not a number raises here)
    except ValueError:
        return "the client_id URL is not a valid URL"
    if "@" in parts.netloc:
        return "the client_id URL has a user name or password"
    if not parts.hostname:
        return "the client_id URL has no host"
    if parts.path in ("", "/"):
        return "the client_id URL has no path"
    if any(segment.lower() in _DOT_SEGMENTS for segment in parts.path.split("/")):
        return "the client_id URL has a dot segment in its path"
    return None


def is_metadata_url(client_id: str) -> bool:
    """Whether ``client_id`` is a Client ID Metadata Document URL: https, with a host and a path other than
    ``/``, and no fragment, user name, password or ``.``/``..`` segment (the draft's section 3)."""
    return url_problem(client_id) is None


# -- the document -----------------------------------------------------------------------------------------
def _shown(value: object) -> str:
    """A value of the document as a refusal quotes it: short, and printable."""
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return repr(text if len(text) <= 80 else text[:77] + "...")


def _is_loopback_host(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def redirect_uri_problem(uri: object) -> str | None:
    """Why ``uri`` cannot be a redirect URI (the rest of a sentence that starts with it), or None: an absolute https
    URI, or http on a loopback host (the MCP authorization spec allows nothing else); never a fragment."""
    if not isinstance(uri, str) or not uri:
        return "is not a non-empty string"
    if any(c.isspace() or ord(c) < 0x20 or c == "\x7f" for c in uri):
        return "contains whitespace or control characters"
    try:
        parts = urlsplit(uri)
        parts.port  # noqa: B018 (a port that is not a number raises here)
    except ValueError:
        return "is not a valid URI"
    if not parts.scheme or not _SCHEME.fullmatch(parts.scheme) or not uri.startswith(parts.scheme + ":"):
        return "is not an absolute URI"
    if "#" in uri:
        return "has a fragment"
    scheme, host = parts.scheme.lower(), parts.hostname or ""
    if scheme == "https" and host:
        return None
    if scheme == "http" and _is_loopback_host(host):
        return None
    return "is neither an https URI nor an http URI on localhost"


def _optional_url(document: Mapping[str, Any], name: str) -> str | None:
    value = document.get(name)
    if value is None:
        return None
    if not isinstance(value, str) or urlsplit(value).scheme.lower() not in ("http", "https") \
            or not urlsplit(value).hostname or any(c.isspace() for c in value):
        raise InvalidClientMetadata(f"the client metadata document's {name} is not an absolute http(s) URL")
    return value


def _strings(document: Mapping[str, Any], name: str, default: tuple[str, ...]) -> tuple[str, ...]:
    value = document.get(name)
    if value is None:
        return default
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise InvalidClientMetadata(f"the client metadata document's {name} is not a list of strings")
    return tuple(value)


@dataclass(frozen=True, slots=True)
class ClientMetadata:
    """A client's metadata document, validated: what the authorization server knows of a client that
    identifies itself by the URL of its document (a public client of the authorization code flow)."""

    client_id: str
    """The document's URL, which is its ``client_id``."""
    client_name: str
    redirect_uris: tuple[str, ...]
    """Where the authorization server may send the user back: an authorization request's ``redirect_uri``
    must match one of them (``wiremcp.auth.oauth.clients.Client.redirect_allowed``, the one rule for every
    client: exactly, or a loopback one on any port)."""
    client_uri: str | None = None
    logo_uri: str | None = None
    grant_types: tuple[str, ...] = ("authorization_code",)
    response_types: tuple[str, ...] = ("code",)
    token_endpoint_auth_method: str = PUBLIC_CLIENT
    scope: str | None = None
    """The scopes the client says it may ask for (space-separated), if it says."""
    document: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The document as it was served (read-only), extra properties included."""

    @classmethod
    def validated(cls, document: object, url: str) -> ClientMetadata:
        """The metadata in ``document``, fetched from ``url``, or ``InvalidClientMetadata`` saying what is wrong:
        not a JSON object; ``client_id`` not ``url`` exactly; no ``client_name`` or ``redirect_uris``; a
        redirect URI that is not an absolute https URI (or an http one on localhost) without a fragment; a
        token endpoint authentication method other than ``none`` (shared secrets are forbidden by the draft,
        ``private_key_jwt`` is not supported); a ``client_secret``; grant types without
        ``authorization_code`` (or with a grant OAuth 2.1 removed); a response type other than ``code``."""
        if not isinstance(document, dict):
            raise InvalidClientMetadata("the client metadata document is not a JSON object")
        client_id = document.get("client_id")
        if client_id != url:
            raise InvalidClientMetadata("the client metadata document's client_id is not the URL it was fetched from"
                                        if client_id is not None else
                                        "the client metadata document has no client_id")
        name = document.get("client_name")
        if not isinstance(name, str) or not name.strip():
            raise InvalidClientMetadata("the client metadata document has no client_name")
        uris = document.get("redirect_uris")
        if not isinstance(uris, list) or not uris:
            raise InvalidClientMetadata("the client metadata document has no redirect_uris")
        for uri in uris:
            problem = redirect_uri_problem(uri)
            if problem:
                raise InvalidClientMetadata(f"the client metadata document's redirect URI {_shown(uri)} {problem}")
        if "client_secret" in document or "client_secret_expires_at" in document:
            raise InvalidClientMetadata("the client metadata document has a client_secret, which a metadata "
                                        "document must not have")
        method = document.get("token_endpoint_auth_method", PUBLIC_CLIENT)
        if method in SHARED_SECRET_METHODS:
            raise InvalidClientMetadata(f"the client metadata document's token_endpoint_auth_method {_shown(method)} "
                                        "needs a shared secret, which a metadata document cannot establish")
        if method != PUBLIC_CLIENT:
            raise InvalidClientMetadata(f"the client metadata document's token_endpoint_auth_method {_shown(method)} "
                                        "is not supported: only public clients (none) are")
        grant_types = _strings(document, "grant_types", ("authorization_code",))
        if "authorization_code" not in grant_types:
            raise InvalidClientMetadata("the client metadata document's grant_types do not include authorization_code")
        removed = sorted(REMOVED_GRANT_TYPES.intersection(grant_types))
        if removed:
            raise InvalidClientMetadata(f"the client metadata document's grant_types include {removed[0]!r}, "
                                        "which OAuth 2.1 does not have")
        response_types = _strings(document, "response_types", ("code",))
        unknown = [kind for kind in response_types if kind not in RESPONSE_TYPES]
        if unknown:
            raise InvalidClientMetadata(f"the client metadata document's response type {_shown(unknown[0])} "
                                        "is not supported: only code is")
        scope = document.get("scope")
        if scope is not None and not isinstance(scope, str):
            raise InvalidClientMetadata("the client metadata document's scope is not a string")
        return cls(client_id=url, client_name=name.strip(), redirect_uris=tuple(uris),
                   client_uri=_optional_url(document, "client_uri"), logo_uri=_optional_url(document, "logo_uri"),
                   grant_types=grant_types, response_types=response_types, token_endpoint_auth_method=method,
                   scope=scope, document=MappingProxyType(dict(document)))

    @property
    def host(self) -> str:
        """The host of the ``client_id`` URL: what the consent page shows beside the client's name."""
        return urlsplit(self.client_id).hostname or ""
