"""``mcp-remote`` (the npm package hosts run as a stdio bridge to a remote MCP server) signs a user in through the
OAuth server and calls a tool as them: a third-party OAuth client, run as a host runs it.

The OAuth server stands in front of a real identity provider (django-oauth-toolkit, OpenID Connect) and an MCP
endpoint, on a real socket. ``npx -y mcp-remote@<pinned> <url> <callback port>`` runs as a subprocess whose stdin
and stdout are the MCP stdio wire, its tokens kept in the test's folder (``MCP_REMOTE_CONFIG_DIR``). It discovers
the authorization server from the resource's 401, registers itself (Dynamic Client Registration), starts its own
loopback callback server and opens the user's browser on the authorization URL, through the ``open`` package: its
bundled ``xdg-open`` runs ``$BROWSER``, and ``xdg-open``, ``gio``, ``x-www-browser`` and ``sensible-browser`` are
its fallbacks. Each of those is a fake browser first on PATH that writes the URL to a file; headless Chromium
then goes there, the user signs in at the provider and allows the client on the consent page, and the browser's
redirect lands on mcp-remote's real callback server, which trades the code for tokens. Then ``initialize`` and
``tools/call whoami`` go over mcp-remote's stdio and the answer names the signed-in user.

Started again with the tokens it kept, mcp-remote refreshes them (rotated) and never opens the browser; given
``--client-metadata-url``, it is known by its Client ID Metadata Document instead of registering.

Needs Node >= 22.19 with npx (``tests/support/node.py``) and Chromium: skipped without them, failed under
``--require-parts``.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.support.client_site import ClientSite
from tests.support.cluster import until
from tests.support.node import node_bin, node_env, npx
from tests.support.oauth_flow import Person, Provider, fake_browsers, provider, serving
from tests.support.parts import chromium
from tests.support.tls import make_certificates, serve_https
from wiremcp import Context, MCPServer
from wiremcp.auth.oauth.clients import LOOPBACK_HOSTS, Client
from wiremcp.auth.oauth.metadata_fetcher import MetadataFetcher
from wiremcp.auth.oauth.server import OAuthServer

pytestmark = pytest.mark.timeout(300)

MCP_REMOTE = "0.15.1"
"""The mcp-remote release the test runs (the registry's latest when the test was written)."""
FOR = "mcp-remote's sign-in test"
OPENED_BOUND = 180.0
"""Failure bound for mcp-remote to open the browser: npx may download it first, then it discovers and registers."""
SIGN_IN_BOUND = 90.0
"""Failure bound for the browser's part: the provider's login, the consent page, mcp-remote's callback."""
ANSWER_BOUND = 60.0
"""Failure bound for an answer on mcp-remote's stdout (the first waits for its token exchange and connection)."""
EXIT_BOUND = 15.0
DESKTOP_VARIABLES = ("DISPLAY", "WAYLAND_DISPLAY", "XDG_CURRENT_DESKTOP", "DESKTOP_SESSION", "KDE_FULL_SESSION",
                     "GNOME_DESKTOP_SESSION_ID", "DBUS_SESSION_BUS_ADDRESS")
"""Unset for mcp-remote, so that ``xdg-open`` takes its generic path (``$BROWSER``) rather than a desktop's."""

@pytest.fixture(scope="module")
def node() -> Path:
    """The folder of the Node (and npx) that runs mcp-remote; the test is skipped without it, or without Chromium
    for the user's browser (failed under ``--require-parts``)."""
    chromium(FOR)
    return node_bin(FOR)


def whoami_server() -> MCPServer:
    server = MCPServer("notes")

    @server.tool(scopes=["notes:read"])
    async def whoami(ctx: Context) -> str:
        """Who calls: their subject and email."""
        principal = ctx.principal
        assert principal is not None
        return f"{principal.subject} {principal.claims.get('email')}"

    return server


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class McpRemote:
    """mcp-remote running: its stdio wire, where it notes the browser's address, its config and its log."""

    process: asyncio.subprocess.Process
    opened: Path
    config: Path
    log: Path
    callback_port: int
    next_id: int = 0
    answers: dict[int, Any] = field(default_factory=dict)

    def said(self) -> str:
        """mcp-remote's stderr and debug log, for a failure's message."""
        logs = [self.log, *sorted(self.config.glob("**/*_debug.log"))]
        return "\n".join(path.read_text(errors="replace")[-4000:] for path in logs if path.exists())

    async def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        await self.process.stdin.drain()

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send a request on the stdio wire; its answer (the lines before it, notifications, are passed over)."""
        self.next_id += 1
        await self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        assert self.process.stdout is not None
        while True:
            try:
                line = await asyncio.wait_for(self.process.stdout.readline(), ANSWER_BOUND)
            except TimeoutError:
                raise AssertionError(f"no answer to {method} within {ANSWER_BOUND}s:\n{self.said()}") from None
            assert line, f"mcp-remote closed its stdout (exit {self.process.returncode}) before answering " \
                         f"{method}:\n{self.said()}"
            message = json.loads(line)
            if message.get("id") == self.next_id:
                answer: dict[str, Any] = message
                return answer

    def stored(self, name: str) -> dict[str, Any]:
        """One of the files mcp-remote keeps in its config folder (``<server hash>_<name>``)."""
        (found,) = self.config.glob(f"**/*_{name}")
        stored: dict[str, Any] = json.loads(found.read_text())
        return stored


@asynccontextmanager
async def mcp_remote(node: Path, url: str, folder: Path, port: int | None = None,
                     *options: str) -> AsyncIterator[McpRemote]:
    """``npx -y mcp-remote@MCP_REMOTE url <port> <options>`` (a free port unless given; Node from the folder
    ``node``) with fake browsers first
    on PATH, its config, log and the browser's address in ``folder`` (a later run there finds what an earlier one
    kept); stopped at the end (stdin closed, then its process group ended)."""
    opened, config, log = folder / "opened-url", folder / "mcp-auth", folder / "mcp-remote.log"
    browsers = fake_browsers(folder / "browsers", opened)
    env = {name: value for name, value in node_env(node).items() if name not in DESKTOP_VARIABLES}
    env |= {"PATH": f"{browsers}{os.pathsep}{env['PATH']}", "BROWSER": str(browsers / "xdg-open"),
            "MCP_REMOTE_CONFIG_DIR": str(config)}
    port = port or free_port()
    with log.open("ab") as stderr:
        process = await asyncio.create_subprocess_exec(
            npx(node), "-y", f"mcp-remote@{MCP_REMOTE}", url, str(port), "--auth-timeout", "120", "--debug",
            *options,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=stderr, env=env,
            cwd=folder, start_new_session=True)
    try:
        yield McpRemote(process, opened, config, log, port)
    finally:
        assert process.stdin is not None
        process.stdin.close()  # mcp-remote ends when its stdin does
        await stopped(process)


async def stopped(process: asyncio.subprocess.Process) -> None:
    """``process`` (npx) and its process group (mcp-remote's node under it) ended: given ``EXIT_BOUND`` to end
    by itself, then terminated, then killed."""
    with suppress(TimeoutError):
        await asyncio.wait_for(process.wait(), EXIT_BOUND)
    for ending in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, ending)
        except ProcessLookupError:  # the whole group has ended
            break
        with suppress(TimeoutError):
            await asyncio.wait_for(process.wait(), EXIT_BOUND)
    await process.wait()


async def signed_in(remote: McpRemote, oauth: OAuthServer, upstream: Provider, profile: Path) -> Person:
    """The user, once mcp-remote has opened their browser, signed in through it to mcp-remote's callback."""
    await until(lambda: remote.opened.exists() or remote.process.returncode is not None, OPENED_BOUND,
                lambda: f"mcp-remote opening a browser:\n{remote.said()}")
    assert remote.opened.exists(), f"mcp-remote exited ({remote.process.returncode}):\n{remote.said()}"
    authorize = remote.opened.read_text().strip()
    assert authorize.startswith(oauth.url("authorize") + "?"), authorize
    person = Person(upstream, profile, FOR, SIGN_IN_BOUND)
    callback = f"http://localhost:{remote.callback_port}/oauth/callback"
    status = await asyncio.to_thread(person.sign_in, authorize, callback)
    assert status == 200, remote.said()
    return person


async def whoami(remote: McpRemote) -> tuple[str, str]:
    """The handshake over mcp-remote's stdio, then ``whoami``: the caller's subject and email."""
    initialized = await remote.request("initialize", {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "wiremcp-mcp-remote-test", "version": "0"}})
    assert initialized["result"]["serverInfo"]["name"] == "notes", initialized
    await remote.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    called = await remote.request("tools/call", {"name": "whoami", "arguments": {}})
    assert "error" not in called, called
    assert called["result"].get("isError") is not True, called
    (block,) = called["result"]["content"]
    subject, email = block["text"].split()
    return subject, email


async def test_mcp_remote_signs_a_user_in_and_calls_a_tool_as_them(node: Path, tmp_path: Path) -> None:
    with provider(tmp_path / "idp") as upstream:
        async with serving(upstream, whoami_server()) as oauth, \
                mcp_remote(node, oauth.resource, tmp_path) as remote:
            person = await signed_in(remote, oauth, upstream, tmp_path / "profile")
            subject, email = await whoami(remote)

            assert email == upstream.idp.email
            for shown in ("MCP CLI Proxy", f"localhost:{remote.callback_port}", "notes:read", upstream.idp.email):
                assert shown in person.consent, (shown, person.consent)
            await registered_as_a_loopback_client(oauth, remote)
            tokens = remote.stored("tokens.json")
            principal = await oauth.verifier.verify(tokens["access_token"])
            assert principal.subject == subject
            assert principal.client_id == remote.stored("client_info.json")["client_id"]
            assert principal.claims.get("email") == upstream.idp.email
            assert "notes:read" in principal.scopes
            assert tokens["refresh_token"]
            assert tokens["token_type"].lower() == "bearer"


async def test_mcp_remote_started_again_refreshes_its_token_without_the_browser(node: Path, tmp_path: Path) -> None:
    """Access tokens of 30 s, inside mcp-remote's 60 s margin: a token it reads counts as expiring, so it trades
    its refresh token for new tokens (rotated each time) before each use, one refresh at a time; the second run
    does so with the tokens the first kept, and never opens the browser."""
    with provider(tmp_path / "idp") as upstream:
        async with serving(upstream, whoami_server(), access_ttl=30.0) as oauth:
            async with mcp_remote(node, oauth.resource, tmp_path) as first:
                await signed_in(first, oauth, upstream, tmp_path / "profile")
                subject, _ = await whoami(first)
                kept = first.stored("tokens.json")
            first.opened.unlink()

            async with mcp_remote(node, oauth.resource, tmp_path, first.callback_port) as second:
                assert await whoami(second) == (subject, upstream.idp.email)
                assert not second.opened.exists(), second.opened.read_text()
                refreshed = second.stored("tokens.json")
            assert refreshed["refresh_token"] != kept["refresh_token"]
            assert (await oauth.verifier.verify(refreshed["access_token"])).subject == subject


async def test_mcp_remote_named_by_its_client_id_metadata_document(node: Path, tmp_path: Path) -> None:
    """``--client-metadata-url``: the OAuth server says it accepts Client ID Metadata Documents, so mcp-remote
    does not register; the server fetches the document (from the client's HTTPS site, its authority trusted by
    the server's fetcher), the consent page names the client as the document does, and the tokens are that
    client's."""
    certificates = make_certificates(tmp_path / "tls")
    site = ClientSite()
    port = free_port()
    async with serve_https(site, certificates) as site.port, \
            MetadataFetcher(allow_private_networks=True, verify=certificates.client_context()) as fetcher:
        client_id = site.serve("/mcp-remote.json", client_name="Notes through mcp-remote", logo_uri=None,
                               client_uri=None, redirect_uris=[f"http://localhost:{port}/oauth/callback"],
                               grant_types=["authorization_code", "refresh_token"])
        with provider(tmp_path / "idp") as upstream:
            async with serving(upstream, whoami_server(), client_metadata=fetcher) as oauth, \
                    mcp_remote(node, oauth.resource, tmp_path, port, "--client-metadata-url", client_id) as remote:
                person = await signed_in(remote, oauth, upstream, tmp_path / "profile")
                subject, email = await whoami(remote)

                assert email == upstream.idp.email
                assert "Notes through mcp-remote" in person.consent, person.consent
                assert site.hits["/mcp-remote.json"] >= 1
                assert not list(remote.config.glob("**/*_client_info.json"))  # nothing registered to keep
                principal = await oauth.verifier.verify(remote.stored("tokens.json")["access_token"])
                assert (principal.subject, principal.client_id) == (subject, client_id)


async def registered_as_a_loopback_client(oauth: OAuthServer, remote: McpRemote) -> None:
    """mcp-remote registered itself (DCR): the client it keeps is in the OAuth server's store, public, its
    redirect URI on its loopback callback port."""
    kept = remote.stored("client_info.json")
    record = await oauth.store.get("client", kept["client_id"])
    assert record is not None, kept
    client = Client.from_record(record)
    assert client.registered_by == "itself"
    assert client.client_name == "MCP CLI Proxy"
    assert client.redirect_uris == (f"http://localhost:{remote.callback_port}/oauth/callback",), client
    assert all(uri.split("/")[2].rpartition(":")[0] in LOOPBACK_HOSTS for uri in client.redirect_uris)
    assert client.public == (kept.get("token_endpoint_auth_method") == "none"), kept
