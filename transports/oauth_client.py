"""Signing a user in at a remote MCP server's authorization server, as ``wiremcp bridge`` does: an ``httpx.Auth``
that gives every request the user's access token.

The way there is the MCP authorization spec's for a client (2025-11-25): the server's 401 names its protected
resource metadata (RFC 9728; else it is looked for at the well-known addresses), which names the authorization
server; that server's metadata (RFC 8414, or OpenID Connect discovery) gives its endpoints and must offer PKCE
with S256. The client is known by its Client ID Metadata Document when one is given and the server accepts them,
else it registers (RFC 7591) with a loopback redirect. The user's browser is opened on the authorization URL
(PKCE, ``state``, the ``resource`` of RFC 8707, the scopes the server asked for); a one-shot server on the loopback
takes the code, which is traded for tokens.

The tokens and the registration are kept in a file only the user can read (``0600`` in a ``0700`` folder), one
per server URL, so that the next start needs no browser; an access token about to expire, or refused with 401, is
refreshed with the refresh token (a refused refresh means signing in again).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import logging
import os
import re
import secrets
import sys
import time
import webbrowser
from collections.abc import AsyncGenerator, Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx

log = logging.getLogger("wiremcp.bridge")

EARLY = 60.0
"""Seconds before its expiry that an access token is refreshed rather than used."""
SIGN_IN_BOUND = 300.0
"""How long the user has to sign in, once the browser is opened."""
CALLBACK_PATH = "/callback"
CLIENT_NAME = "wiremcp bridge"


class SignInFailed(httpx.TransportError):
    """Signing in (or getting a token) could not be done: the line to print says why. A transport error to the
    requests it was for: the connection to the server fails as if it could not be reached."""


def cache_folder() -> Path:
    """Where tokens are kept: ``$XDG_CACHE_HOME/wiremcp/bridge`` (else ``~/.cache/wiremcp/bridge``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "wiremcp" / "bridge"


class BrowserSignIn(httpx.Auth):
    """The signed-in user's bearer token on every request to ``server`` (its MCP endpoint's URL)."""

    def __init__(self, server: str, *, folder: Path | None = None, client_metadata_url: str | None = None,
                 open_browser: Callable[[str], object] = webbrowser.open) -> None:
        self.server = server
        self.client_metadata_url = client_metadata_url
        self.open_browser = open_browser
        self.file = (folder or cache_folder()) / f"{hashlib.sha256(server.encode()).hexdigest()[:24]}.json"
        self.kept: dict[str, Any] = self._read()
        self._lock: asyncio.Lock | None = None

    # -- httpx.Auth ----------------------------------------------------------------------------------------
    async def async_auth_flow(self, request: httpx.Request) -> AsyncGenerator[httpx.Request, httpx.Response]:
        token = await self.access_token()
        if token is not None:
            request.headers["Authorization"] = f"Bearer {token}"
        response = yield request
        if response.status_code != 401:
            return
        token = await self.access_token(refused=token, challenge=response.headers.get("www-authenticate", ""))
        request.headers["Authorization"] = f"Bearer {token}"
        yield request

    async def ready(self) -> None:
        """Have a token before serving: from the file, refreshed, or by signing in now (the browser)."""
        try:
            async with httpx.AsyncClient(timeout=30) as http:
                probe = await http.post(self.server, json={"jsonrpc": "2.0", "id": 0, "method": "ping"}, headers={
                    "Accept": "application/json, text/event-stream", **self._bearer()})
        except httpx.HTTPError:
            return  # not reachable now: the bridge keeps trying, and signs in at its first 401
        if probe.status_code == 401:
            await self.access_token(refused=self.kept.get("tokens", {}).get("access_token"),
                                    challenge=probe.headers.get("www-authenticate", ""))

    # -- tokens ----------------------------------------------------------------------------------------------
    def _bearer(self) -> dict[str, str]:
        token = self.kept.get("tokens", {}).get("access_token")
        return {"Authorization": f"Bearer {token}"} if token else {}

    async def access_token(self, *, refused: str | None = None, challenge: str | None = None) -> str | None:
        """A token to send: the kept one while it is good; refreshed when it is about to expire or was
        ``refused``; else (``challenge``: a 401's ``WWW-Authenticate``) one from signing in. None: none yet and no
        401 seen (the request goes without one)."""
        self._lock = self._lock or asyncio.Lock()
        async with self._lock:  # one refresh or sign-in at a time, the others wait for its token
            tokens = self.kept.get("tokens") or {}
            current = tokens.get("access_token")
            if current and current != refused and tokens.get("expires_at", float("inf")) - EARLY > time.time():
                return str(current)
            if tokens.get("refresh_token") and await self._refresh():
                return str(self.kept["tokens"]["access_token"])
            if challenge is None:
                return str(current) if current else None
            await self._sign_in(challenge)
            return str(self.kept["tokens"]["access_token"])

    async def _refresh(self) -> bool:
        client, endpoints = self.kept.get("client") or {}, self.kept.get("endpoints") or {}
        if not client or not endpoints.get("token_endpoint"):
            return False
        form = {"grant_type": "refresh_token", "refresh_token": self.kept["tokens"]["refresh_token"],
                "resource": self.server}
        try:
            async with httpx.AsyncClient(timeout=30) as http:
                answer = await _token_request(http, endpoints["token_endpoint"], client, form)
        except SignInFailed as exc:
            log.warning("refreshing the token failed (%s): signing in again", exc)
            self.kept.pop("tokens", None)
            self._write()
            return False
        self._keep_tokens(answer, keep_refresh=self.kept["tokens"]["refresh_token"])
        return True

    # -- signing in ------------------------------------------------------------------------------------------
    async def _sign_in(self, challenge: str) -> None:
        async with httpx.AsyncClient(timeout=30, follow_redirects=True) as http:
            resource = await self._resource_metadata(http, _parameter(challenge, "resource_metadata"))
            issuers = resource.get("authorization_servers")
            if not isinstance(issuers, list) or not issuers or not isinstance(issuers[0], str):
                raise SignInFailed(f"{self.server} names no authorization server in its protected resource metadata")
            endpoints = await _authorization_server(http, issuers[0])
            scope = _parameter(challenge, "scope") or " ".join(
                s for s in resource.get("scopes_supported") or [] if isinstance(s, str))
            callback = await _Callback.start(self.kept.get("redirect_port"))
            try:
                client = await self._client(http, endpoints, callback.redirect_uri)
                verifier = secrets.token_urlsafe(48)
                state = secrets.token_urlsafe(24)
                query = {"response_type": "code", "client_id": client["client_id"],
                         "redirect_uri": callback.redirect_uri, "state": state,
                         "code_challenge": _challenge(verifier), "code_challenge_method": "S256",
                         "resource": self.server, **({"scope": scope} if scope else {})}
                address = f"{endpoints['authorization_endpoint']}?{urlencode(query)}"
                sys.stderr.write(f"wiremcp bridge: sign in to {self.server} in your browser: {address}\n")
                sys.stderr.flush()
                await asyncio.to_thread(self.open_browser, address)
                answer = await callback.answer(SIGN_IN_BOUND)
            finally:
                await callback.close()
            if answer.get("state") != state:
                raise SignInFailed("the sign-in came back with another state: it was not this one's")
            if "code" not in answer:
                raise SignInFailed(f"the sign-in was refused: {answer.get('error_description') or answer.get('error')}")
            form = {"grant_type": "authorization_code", "code": answer["code"], "redirect_uri": callback.redirect_uri,
                    "code_verifier": verifier, "resource": self.server}
            tokens = await _token_request(http, endpoints["token_endpoint"], client, form)
        self.kept.update(client=client, endpoints=endpoints, redirect_port=callback.port)
        self._keep_tokens(tokens)

    async def _resource_metadata(self, http: httpx.AsyncClient, named: str | None) -> dict[str, Any]:
        parts = urlsplit(self.server)
        origin, path = f"{parts.scheme}://{parts.netloc}", parts.path.rstrip("/")
        for url in ([named] if named else []) + [f"{origin}/.well-known/oauth-protected-resource{path}",
                                                  f"{origin}/.well-known/oauth-protected-resource"]:
            found = await _json(http, url)
            if found is not None:
                return found
        raise SignInFailed(f"{self.server} asks for a token but publishes no protected resource metadata")

    async def _client(self, http: httpx.AsyncClient, endpoints: dict[str, Any], redirect_uri: str) -> dict[str, Any]:
        """Who the bridge is at this authorization server: its metadata document's URL where one is given and
        accepted, the registration kept from before for this redirect, else a new registration."""
        if self.client_metadata_url and endpoints.get("client_id_metadata_document_supported") is True:
            return {"client_id": self.client_metadata_url}
        kept = self.kept.get("client") or {}
        if kept.get("issuer") == endpoints.get("issuer") and redirect_uri in kept.get("redirect_uris", []):
            return dict(kept)
        registration = endpoints.get("registration_endpoint")
        if not isinstance(registration, str):
            raise SignInFailed("the authorization server takes no registrations (and no Client ID Metadata Document "
                               "was given with --client-metadata-url)")
        answer = await http.post(registration, json={
            "client_name": CLIENT_NAME, "redirect_uris": [redirect_uri], "grant_types": ["authorization_code",
                                                                                       "refresh_token"],
            "response_types": ["code"], "token_endpoint_auth_method": "none"})
        body = _body(answer)
        if answer.status_code not in (200, 201) or not isinstance(body.get("client_id"), str):
            raise SignInFailed(f"registering with the authorization server failed (HTTP {answer.status_code}: "
                               f"{body.get('error_description') or body.get('error') or 'no reason given'})")
        return {**body, "issuer": endpoints.get("issuer"), "redirect_uris": [redirect_uri]}

    def _keep_tokens(self, answer: dict[str, Any], keep_refresh: str | None = None) -> None:
        lifetime = answer.get("expires_in")
        self.kept["tokens"] = {
            "access_token": answer["access_token"], "refresh_token": answer.get("refresh_token") or keep_refresh,
            **({"expires_at": time.time() + lifetime} if isinstance(lifetime, int | float) else {})}
        self._write()

    # -- the file --------------------------------------------------------------------------------------------
    def _read(self) -> dict[str, Any]:
        try:
            kept = json.loads(self.file.read_text())
        except (OSError, ValueError):
            return {}
        return kept if isinstance(kept, dict) else {}

    def _write(self) -> None:
        self.file.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(self.file.parent, 0o700)
        temporary = self.file.with_suffix(f".{os.getpid()}.tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            json.dump(self.kept, out)
        os.replace(temporary, self.file)


class ClientCredentials(httpx.Auth):
    """A service's own token on every request (the client credentials grant, RFC 6749 section 4.4): for a gateway
    whose upstream wants the gateway itself signed in, ``remote(url, auth=ClientCredentials(...))``. The token is
    asked for at the first request, kept until shortly before it expires, and asked for again then or when the
    upstream refuses it (401). ``resource`` (RFC 8707) and ``scope`` are sent when given; the client authenticates
    with HTTP Basic (``client_secret_basic``), or in the form (``client_secret_post``)."""

    def __init__(self, token_url: str, client_id: str, client_secret: str, *, scope: str | None = None,
                 resource: str | None = None, method: str = "client_secret_basic") -> None:
        if method not in ("client_secret_basic", "client_secret_post"):
            raise ValueError("method must be 'client_secret_basic' or 'client_secret_post'")
        self.token_url, self.scope, self.resource = token_url, scope, resource
        self.client = {"client_id": client_id, "client_secret": client_secret, "token_endpoint_auth_method": method}
        self._token: tuple[str, float] | None = None
        self._lock: asyncio.Lock | None = None

    async def async_auth_flow(self, request: httpx.Request) -> AsyncGenerator[httpx.Request, httpx.Response]:
        token = await self._current()
        request.headers["Authorization"] = f"Bearer {token}"
        response = yield request
        if response.status_code == 401:
            request.headers["Authorization"] = f"Bearer {await self._current(refused=token)}"
            yield request

    async def _current(self, refused: str | None = None) -> str:
        self._lock = self._lock or asyncio.Lock()
        async with self._lock:
            if self._token is not None and self._token[0] != refused and self._token[1] - EARLY > time.time():
                return self._token[0]
            form = {"grant_type": "client_credentials", **({"scope": self.scope} if self.scope else {}),
                    **({"resource": self.resource} if self.resource else {})}
            async with httpx.AsyncClient(timeout=30) as http:
                answer = await _token_request(http, self.token_url, self.client, form)
            lifetime = answer.get("expires_in")
            self._token = (answer["access_token"], time.time() + (lifetime if isinstance(lifetime, int | float)
                                                                    else 3600.0))
            return self._token[0]


class _Callback:
    """A one-shot server on the loopback that takes the authorization server's redirect."""

    def __init__(self, server: asyncio.Server, port: int) -> None:
        self.server, self.port = server, port
        self.redirect_uri = f"http://127.0.0.1:{port}{CALLBACK_PATH}"
        self.answered: asyncio.Future[dict[str, str]] = asyncio.get_running_loop().create_future()

    @classmethod
    async def start(cls, port: object) -> _Callback:
        holder: list[_Callback] = []

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError, ValueError):
                line = (await reader.readline()).decode("latin-1")
                while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                    pass
                target = line.split(" ")[1] if line.count(" ") >= 2 else ""
                parts = urlsplit(target)
                found = parts.path == CALLBACK_PATH and holder and not holder[0].answered.done()
                if found:
                    holder[0].answered.set_result({k: v[0] for k, v in parse_qs(parts.query).items()})
                page = b"Signed in: you can close this tab." if found else b"Not found"
                status = b"200 OK" if found else b"404 Not Found"
                writer.write(b"HTTP/1.1 " + status + b"\r\nContent-Type: text/plain; charset=utf-8\r\n"
                             b"Content-Length: " + str(len(page)).encode() + b"\r\nConnection: close\r\n\r\n" + page)
                await writer.drain()
            writer.close()

        try:
            server = await asyncio.start_server(handle, "127.0.0.1", port if isinstance(port, int) else 0)
        except OSError:  # the port registered before is taken now: another one (registering again)
            server = await asyncio.start_server(handle, "127.0.0.1", 0)
        callback = cls(server, int(server.sockets[0].getsockname()[1]))
        holder.append(callback)
        return callback

    async def answer(self, bound: float) -> dict[str, str]:
        try:
            return await asyncio.wait_for(self.answered, bound)
        except TimeoutError:
            raise SignInFailed(f"no sign-in within {bound:g} s") from None

    async def close(self) -> None:
        self.server.close()
        with contextlib.suppress(Exception):
            await self.server.wait_closed()


async def _token_request(http: httpx.AsyncClient, endpoint: str, client: dict[str, Any],
                         form: dict[str, str]) -> dict[str, Any]:
    """A token endpoint's answer to ``form``, the client authenticating as its registration says (none, or its
    secret in the form or by HTTP Basic); ``SignInFailed`` when it refuses."""
    form = {**form, "client_id": client["client_id"]}
    auth = None
    if client.get("client_secret"):
        if client.get("token_endpoint_auth_method") == "client_secret_basic":
            auth = httpx.BasicAuth(client["client_id"], client["client_secret"])
        else:
            form["client_secret"] = client["client_secret"]
    answer = await http.post(endpoint, data=form, auth=auth or httpx.USE_CLIENT_DEFAULT,
                             headers={"Accept": "application/json"})
    body = _body(answer)
    if answer.status_code != 200 or not isinstance(body.get("access_token"), str):
        raise SignInFailed(f"the token endpoint refused ({body.get('error') or answer.status_code})")
    return body


async def _authorization_server(http: httpx.AsyncClient, issuer: str) -> dict[str, Any]:
    """The authorization server's metadata (RFC 8414, else OpenID Connect discovery), which must offer PKCE S256."""
    parts = urlsplit(issuer)
    origin, path = f"{parts.scheme}://{parts.netloc}", parts.path.rstrip("/")
    addresses = [f"{origin}/.well-known/oauth-authorization-server{path}",
                 f"{origin}/.well-known/openid-configuration{path}"]
    if path:
        addresses.append(f"{origin}{path}/.well-known/openid-configuration")
    for url in addresses:
        found = await _json(http, url)
        if found is None:
            continue
        if "S256" not in (found.get("code_challenge_methods_supported") or []):
            raise SignInFailed(f"the authorization server {issuer} does not offer PKCE with S256: not signing in there")
        if not all(isinstance(found.get(name), str) for name in ("authorization_endpoint", "token_endpoint")):
            raise SignInFailed(f"the authorization server {issuer} publishes no authorization or token endpoint")
        return found
    raise SignInFailed(f"the authorization server {issuer} publishes no metadata")


async def _json(http: httpx.AsyncClient, url: str) -> dict[str, Any] | None:
    try:
        answer = await http.get(url, headers={"Accept": "application/json"})
    except httpx.HTTPError:
        return None
    body = _body(answer) if answer.status_code == 200 else {}
    return body or None


def _body(answer: httpx.Response) -> dict[str, Any]:
    try:
        body = answer.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _parameter(challenge: str, name: str) -> str | None:
    found = re.search(rf'{name}="([^"]*)"', challenge)
    return found.group(1) if found else None


def _challenge(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
