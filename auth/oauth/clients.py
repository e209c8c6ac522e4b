"""The clients the OAuth server knows, and how it knows them: pre-registered by the operator, registered by
themselves (Dynamic Client Registration, RFC 7591), or named by the URL of their metadata document (Client ID
Metadata Documents, fetched when they first ask to sign a user in).

A redirect URI must match one the client registered, exactly, with one exception (RFC 8252, 7.3): a loopback
redirect URI (``http://127.0.0.1``, ``http://[::1]``, ``http://localhost``) matches on any port, since a native
client listens on whichever port it gets.
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from wiremcp.auth.oauth.client_metadata import ClientMetadataError, redirect_uri_problem, url_problem
from wiremcp.auth.oauth.metadata_fetcher import MetadataFetcher
from wiremcp.auth.oauth.sealing import digest
from wiremcp.grant_store import GrantStore
from wiremcp.types import JSONObject

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "[::1]", "localhost"})
REGISTRATION_TTL = 180 * 86400.0
"""How long a dynamically registered client is kept (its registration is renewed when it signs a user in)."""
AUTH_METHODS = ("none", "client_secret_post", "client_secret_basic")
URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://")
"""How a ``client_id`` that is a URL begins (a scheme and ``//``): dynamically registered ids never do."""


class ClientError(Exception):
    """A client or its request is not acceptable: ``error`` is the OAuth code (``invalid_client``,
    ``invalid_redirect_uri``, ``invalid_client_metadata``), the message a description safe to show."""

    def __init__(self, error: str, description: str) -> None:
        super().__init__(description)
        self.error = error
        self.description = description


@dataclass(frozen=True, slots=True)
class Client:
    """An OAuth client of this server."""

    client_id: str
    redirect_uris: tuple[str, ...]
    client_name: str | None = None
    client_uri: str | None = None
    logo_uri: str | None = None
    secret_digest: str | None = None
    """A confidential client's secret, by its digest; None: a public client (PKCE alone)."""
    registered_by: str = "operator"
    """``operator`` (pre-registered), ``itself`` (dynamic registration) or ``metadata document``."""

    @property
    def public(self) -> bool:
        return self.secret_digest is None

    def redirect_allowed(self, redirect_uri: str) -> bool:
        return any(_redirect_matches(registered, redirect_uri) for registered in self.redirect_uris)

    def secret_matches(self, secret: str | None) -> bool:
        if self.secret_digest is None:
            return True
        return secret is not None and secrets.compare_digest(self.secret_digest, digest(secret))

    def to_record(self) -> JSONObject:
        return {"client_id": self.client_id, "redirect_uris": list(self.redirect_uris),
                "client_name": self.client_name, "client_uri": self.client_uri, "logo_uri": self.logo_uri,
                "secret_digest": self.secret_digest, "registered_by": self.registered_by}

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Client:
        return cls(str(record["client_id"]), tuple(record["redirect_uris"]), record.get("client_name"),
                   record.get("client_uri"), record.get("logo_uri"), record.get("secret_digest"),
                   str(record.get("registered_by", "itself")))


@dataclass(slots=True)
class Registrations:
    """Where clients come from, and the rules for each way."""

    store: GrantStore
    fetcher: MetadataFetcher | None = None
    """Client ID Metadata Documents; None: a URL-shaped client id is unknown."""
    dynamic: bool = True
    """Dynamic Client Registration (``/oauth/register``)."""
    preregistered: Mapping[str, Client] = field(default_factory=dict)
    per_source: int = 20
    """Dynamic registrations one address may make an hour."""

    async def find(self, client_id: str) -> Client:
        """The client ``client_id`` names; ``ClientError("invalid_client")`` when none does. A ``client_id`` that is
        a URL (and not a pre-registered one) can only be a metadata document's: one that is not an acceptable
        document URL is refused with the rule it breaks (``url_problem``), one that is with the fetcher's
        refusal, if it refuses."""
        if client_id in self.preregistered:
            return self.preregistered[client_id]
        if URL.match(client_id):
            if self.fetcher is None:
                raise ClientError("invalid_client", "this server does not accept client metadata documents")
            problem = url_problem(client_id)
            if problem:
                raise ClientError("invalid_client", f"{problem}, so it cannot name a client metadata document")
            try:
                metadata = await self.fetcher.fetch(client_id)
            except ClientMetadataError as exc:
                raise ClientError("invalid_client", f"the client's metadata document: {exc}") from None
            return Client(metadata.client_id, tuple(metadata.redirect_uris), metadata.client_name,
                          metadata.client_uri, metadata.logo_uri, None, "metadata document")
        record = await self.store.get("client", client_id) if self.dynamic else None
        if record is None:
            raise ClientError("invalid_client", "unknown client_id")
        return Client.from_record(record)

    async def renew(self, client: Client) -> None:
        """Keep a client that registered itself for ``REGISTRATION_TTL`` from now: it is in use (a user is signing
        in through it). Clients known otherwise are not the store's to keep."""
        if client.registered_by == "itself":
            await self.store.put("client", client.client_id, client.to_record(), REGISTRATION_TTL)

    async def register(self, document: Mapping[str, Any], source: str) -> tuple[Client, JSONObject]:
        """A client registered by itself (RFC 7591): the client and the registration response."""
        if not self.dynamic:
            raise ClientError("invalid_client_metadata", "dynamic client registration is off")
        if await self.store.count("registrations", source, 3600.0) > self.per_source:
            raise ClientError("too_many_registrations", "too many registrations from this address; try later")
        redirect_uris = document.get("redirect_uris")
        if not isinstance(redirect_uris, list) or not redirect_uris or not all(isinstance(u, str) for u in redirect_uris):
            raise ClientError("invalid_redirect_uri", "redirect_uris is a non-empty list of URIs")
        if len(redirect_uris) > 10:
            raise ClientError("invalid_redirect_uri", "at most 10 redirect_uris")
        for uri in redirect_uris:
            problem = redirect_uri_problem(uri)
            if problem:
                raise ClientError("invalid_redirect_uri", f"{uri} {problem}")
        method = document.get("token_endpoint_auth_method", "client_secret_basic")
        if method not in AUTH_METHODS:
            raise ClientError("invalid_client_metadata", f"token_endpoint_auth_method is one of {', '.join(AUTH_METHODS)}")
        grant_types = document.get("grant_types", ["authorization_code"])
        if not isinstance(grant_types, list) or "authorization_code" not in grant_types or \
                not set(grant_types) <= {"authorization_code", "refresh_token"}:
            raise ClientError("invalid_client_metadata", "grant_types are authorization_code and refresh_token")
        response_types = document.get("response_types", ["code"])
        if response_types != ["code"]:
            raise ClientError("invalid_client_metadata", "response_types is [\"code\"]")
        texts = {name: document.get(name) for name in ("client_name", "client_uri", "logo_uri")}
        for name, value in texts.items():
            if value is not None and (not isinstance(value, str) or len(value) > 500):
                raise ClientError("invalid_client_metadata", f"{name} is a string of at most 500 characters")
        for name in ("client_uri", "logo_uri"):
            value = texts[name]
            if value is not None and urlsplit(value).scheme != "https":
                raise ClientError("invalid_client_metadata", f"{name} is an https URL")
        secret = secrets.token_urlsafe(32) if method != "none" else None
        client = Client(f"wmc-{secrets.token_urlsafe(18)}", tuple(redirect_uris), texts["client_name"],
                        texts["client_uri"], texts["logo_uri"], digest(secret) if secret else None, "itself")
        await self.store.put("client", client.client_id, client.to_record(), REGISTRATION_TTL)
        response: JSONObject = {"client_id": client.client_id, "client_id_issued_at": int(time.time()),
                                "redirect_uris": list(redirect_uris), "token_endpoint_auth_method": method,
                                "grant_types": grant_types, "response_types": ["code"],
                                **{k: v for k, v in texts.items() if v is not None}}
        if secret:
            response["client_secret"] = secret
            response["client_secret_expires_at"] = 0
        return client, response


def _host(uri: str) -> str:
    netloc = urlsplit(uri).netloc.rpartition("@")[2].lower()
    if netloc.startswith("["):
        return netloc[:netloc.index("]") + 1]
    return netloc.partition(":")[0]


def _redirect_matches(registered: str, asked: str) -> bool:
    if registered == asked:
        return True
    one, other = urlsplit(registered), urlsplit(asked)
    if one.scheme != "http" or other.scheme != "http" or _host(registered) not in LOOPBACK_HOSTS:
        return False
    same_but_port = (_host(registered) == _host(asked) and one.path == other.path and one.query == other.query
                     and not other.fragment and "@" not in other.netloc)
    return same_but_port
