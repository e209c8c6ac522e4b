"""``docs/authorization.md``, run: the static-token recipe served and called as typed, the production environment,
the scopes example, the mounted example and the development authorization flow."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.docs_pages import (
    DOCS,
    accepting,
    background,
    block,
    curl,
    exec_as_file,
    initialize,
    sh,
)
from tests.support.http import ACCEPT_BOTH, free_port
from wiremcp import MCPError, Principal
from wiremcp.transports import Client

pytestmark = pytest.mark.timeout(120)

PAGE = DOCS / "authorization.md"
CHECKED = {"static-serve", "static-call", "static-401", "auth-env", "scopes", "auth-mount", "dev-auth", "oauth-server",
           "upstream-token"}


def test_the_static_token_recipe_serves_the_token_and_refuses_without_it() -> None:
    """The recipe's command as typed (its port a free one): the call with the token prints the tool's result,
    the call without it prints the page's one line and fails, and the raw 401 is the page's."""
    port = free_port()
    (command,) = block(PAGE, "static-serve").text.splitlines()
    assert "--port 8000" in command
    with background(command.replace("8000", str(port))) as process:
        accepting(process, port)
        calls = block(PAGE, "static-call").text.replace("8000", str(port)).split("$ ")[1:]
        assert len(calls) == 2
        for call in calls:
            typed, *shown = call.splitlines()
            done = sh(typed)
            assert (done.stdout + done.stderr).splitlines() == shown, done.stdout + done.stderr
            assert done.returncode == (0 if "Bearer dev-token" in typed else 1)
        refused = httpx.post(f"http://127.0.0.1:{port}/mcp", json={}, headers={"accept": ACCEPT_BOTH}, timeout=10)
        unknown = httpx.post(f"http://127.0.0.1:{port}/mcp", json={},
                             headers={"accept": ACCEPT_BOTH, "authorization": "Bearer another-token"}, timeout=10)
        metadata = httpx.get(f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp", timeout=10)
    status, *headers, blank, body = block(PAGE, "static-401").text.replace("8000", str(port)).splitlines()
    assert status == "HTTP/1.1 401 Unauthorized"
    assert refused.status_code == 401
    assert blank == ""
    for header in headers:
        name, _, value = header.partition(": ")
        assert refused.headers[name] == value, refused.headers
    assert refused.json() == json.loads(body)
    assert unknown.status_code == 401
    assert 'error="invalid_token"' in unknown.headers["www-authenticate"]
    assert metadata.json() == {"resource": f"http://127.0.0.1:{port}/mcp", "bearer_methods_supported": ["header"]}


def test_the_static_token_format_gives_subjects_and_scopes() -> None:
    from wiremcp.auth import StaticTokenVerifier

    verifier = StaticTokenVerifier.from_pairs(["dev-token=alice", "ci-token=ci:mcp:tools admin"])
    assert verifier._tokens == {"dev-token": Principal("static", "alice"),
                                "ci-token": Principal("static", "ci", scopes=frozenset({"mcp:tools", "admin"}))}


def test_the_auth_environment_serves_metadata_and_challenges() -> None:
    port = free_port()
    command = " ".join(block(PAGE, "auth-env").text.replace("\\\n", " ").split())
    command = command.replace("--host 0.0.0.0", f"--host 127.0.0.1 --port {port}")
    with background(command) as process:
        accepting(process, port)
        base = f"http://127.0.0.1:{port}"
        metadata = httpx.get(f"{base}/.well-known/oauth-protected-resource/mcp",
                             headers={"host": "mcp.example.com"}, timeout=10)
        refused = initialize(f"{base}/mcp", host="mcp.example.com")
    assert metadata.status_code == 200, metadata.text
    assert metadata.json()["resource"] == "https://mcp.example.com/mcp"
    assert metadata.json()["authorization_servers"] == ["https://login.example.com"]
    assert metadata.json()["scopes_supported"] == ["mcp:tools"]
    assert refused.status_code == 401
    assert refused.headers["www-authenticate"] == ('Bearer scope="mcp:tools", resource_metadata="https://mcp.example.com'
                                                   '/.well-known/oauth-protected-resource/mcp"')


async def test_the_scopes_example_filters_lists_and_refuses_a_caller_without_the_scope(tmp_path: Path) -> None:
    server = exec_as_file(PAGE, "scopes", tmp_path / "server.py")["server"]
    reader = Principal("https://login.example.com", "alice", scopes=frozenset({"mcp:tools"}))
    writer = Principal("https://login.example.com", "bob", scopes=frozenset({"files"}))
    async with Client(server, principal=reader) as client:
        assert [tool["name"] for tool in await client.list_tools()] == ["read_file"]
        with pytest.raises(MCPError) as refused:
            await client.call_tool("write_file", {"path": "notes.txt", "text": "hello"})
    assert str(refused.value) == "Forbidden: this needs the scopes files:write"
    assert refused.value.data == {"requiredScopes": ["files:write"]}
    async with Client(server, principal=writer) as client:  # "files" covers "files:write"
        assert [tool["name"] for tool in await client.list_tools()] == ["read_file", "write_file"]
        wrote = await client.call_tool("write_file", {"path": "notes.txt", "text": "hello"})
    assert wrote["content"][0]["text"] == "bob wrote 5 characters to notes.txt"
    async with Client(server) as client:  # no principal: nothing to check
        wrote = await client.call_tool("write_file", {"path": "notes.txt", "text": "hello"})
    assert wrote["content"][0]["text"] == "a local client wrote 5 characters to notes.txt"


async def test_the_mounted_auth_example_serves_metadata_and_challenges(tmp_path: Path) -> None:
    from examples.word_count import server

    app = exec_as_file(PAGE, "auth-mount", tmp_path / "app.py", server=server)["app"]
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="https://example.com") as http:
        metadata = await http.get("/.well-known/oauth-protected-resource/api/mcp")
        root = await http.get("/.well-known/oauth-protected-resource")
        refused = await http.post("/api/mcp", json={}, headers={"accept": ACCEPT_BOTH})
    assert metadata.status_code == 200, metadata.text
    assert metadata.json()["resource"] == "https://example.com/api/mcp"
    assert root.json() == metadata.json()
    assert refused.status_code == 401


def test_the_development_authorization_flow_gets_a_token_the_server_takes() -> None:
    curl("the development authorization flow")
    lines = [line for line in block(PAGE, "dev-auth").text.splitlines() if line and not line.startswith("#")]
    auth_port, mcp_port = free_port(), free_port()

    def ported(line: str) -> str:
        return line.replace("9000", str(auth_port)).replace("8000", str(mcp_port))

    start_as, start_mcp, register, token = (ported(line) for line in [lines[0], lines[1] + " " + lines[2], *lines[3:]])
    start_mcp = start_mcp.replace("\\ ", " ") + f" --port {mcp_port}"
    assert start_as.endswith(" &")
    with background(start_as.removesuffix(" &")) as auth_server, background(start_mcp) as mcp:
        accepting(auth_server, auth_port)
        accepting(mcp, mcp_port)
        registered = sh(register)
        assert registered.returncode == 0, registered.stderr
        client: dict[str, Any] = json.loads(registered.stdout)
        minted = sh(token.replace("CLIENT_ID", client["client_id"]).replace("CLIENT_SECRET", client["client_secret"]))
        assert minted.returncode == 0, minted.stderr
        access_token = json.loads(minted.stdout)["access_token"]
        answer = initialize(f"http://127.0.0.1:{mcp_port}/mcp", authorization=f"Bearer {access_token}")
        refused = initialize(f"http://127.0.0.1:{mcp_port}/mcp")
    assert answer.status_code == 200, answer.text
    assert refused.status_code == 401


async def test_the_oauth_server_example_serves_its_metadata_and_takes_its_own_tokens(tmp_path: Path) -> None:
    namespace = exec_as_file(PAGE, "oauth-server", tmp_path / "server.py")
    app, oauth, rule = namespace["app"], namespace["oauth"], namespace["staff_only"]
    admin = rule({"sub": "u1", "email": "ada@example.com", "groups": ["admins"]})
    reader = rule({"sub": "u2", "email": "bob@example.com"})
    assert rule({"sub": "u3", "email": "eve@elsewhere.org"}) is None
    assert admin.scopes == frozenset({"notes:read", "notes:write"})
    assert reader.scopes == frozenset({"notes:read"})
    from wiremcp.auth.oauth.tokens import Grant

    code = await oauth.tokens.code(Grant("c", "u2", ("notes:read",), oauth.resource, {"email": "bob@example.com"}),
                                   redirect_uri="r", code_challenge="x")
    issued = await oauth.tokens.redeem(code, client_id="c", redirect_uri="r", check_verifier=lambda _: True)
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "whoami", "arguments": {},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {}}}}
    headers = {"accept": ACCEPT_BOTH, "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call",
               "mcp-name": "whoami"}
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="https://mcp.example.com") as http:
        metadata = (await http.get("/.well-known/oauth-authorization-server")).json()
        resource = (await http.get("/.well-known/oauth-protected-resource/mcp")).json()
        refused = await http.post("/mcp", json=body, headers=headers)
        answered = await http.post("/mcp", json=body, headers={**headers, "authorization": f"Bearer {issued.access_token}"})
    assert metadata["authorization_endpoint"] == "https://mcp.example.com/oauth/authorize"
    assert metadata["code_challenge_methods_supported"] == ["S256"]
    assert resource["authorization_servers"] == ["https://mcp.example.com"]
    assert refused.status_code == 401
    assert answered.json()["result"]["content"][0]["text"] == "u2 (bob@example.com)"


async def test_a_tool_without_a_signed_in_caller_says_to_sign_in(tmp_path: Path) -> None:
    """The upstream-token example run as the reader saves it: a caller the OAuth server did not sign in (here, no
    authentication at all) gets the tool's error, not a crash; the signed-in case is run against a real provider
    by tests/e2e/test_oauth_server.py."""
    server = exec_as_file(PAGE, "upstream-token", tmp_path / "server.py")["server"]
    async with Client(server) as client:
        result = await client.call_tool("my_repositories")
    assert result["isError"] is True
    assert result["content"][0]["text"] == ("sign in with GitHub first: the caller was not signed in by an OAuth "
                                            "server of this process")
