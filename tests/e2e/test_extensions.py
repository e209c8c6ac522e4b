"""The two final extensions with the official MCP Python SDK client (``mcp``) as the host, against the examples
a user would copy: Agent Skills (SEP-2640, ``examples/skills``) and MCP Apps (SEP-1865, ``examples/apps``),
over Streamable HTTP (a real uvicorn, both eras) and over stdio (``wiremcp stdio``, both eras).

The client has no skills or apps API of its own: skills' methods go out as plain requests, and the host's
checks are done here as a host must do them (SEP-2640 "Integrity and verification": each file read is
verified against its entry's digest and size, and SKILL.md's frontmatter against the entry's).
"""

from __future__ import annotations

import base64
import hashlib
import html
import http.server
import json
import re
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, Literal

import anyio
import pytest
import yaml
from mcp import Client, StdioServerParameters
from mcp.client.extension import advertise
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError
from mcp.types import BlobResourceContents, Request, TextResourceContents
from pydantic import TypeAdapter

from tests.support.http import UvicornProcess, free_port, run_uvicorn
from tests.support.official_client import WAIT, connect
from tests.support.parts import chromium

ROOT = Path(__file__).resolve().parents[2]
SEP = "seps/2640-skills-extension"
APPS = "ext-apps/2026-01-26/apps"
SKILLS = "examples.skills.server:server"
COUNTER = "examples.apps.server:server"
UI = "io.modelcontextprotocol/ui"
MODES = ["auto", "legacy"]

pytestmark = [pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
              pytest.mark.timeout(60)]


class SkillsList(Request[dict[str, Any], Literal["skills/list"]]):
    method: Literal["skills/list"] = "skills/list"


class SkillsGet(Request[dict[str, Any], Literal["skills/get"]]):
    method: Literal["skills/get"] = "skills/get"


class DirectoryRead(Request[dict[str, Any], Literal["resources/directory/read"]]):
    method: Literal["resources/directory/read"] = "resources/directory/read"


ANY: TypeAdapter[dict[str, Any]] = TypeAdapter(dict[str, Any])


async def ask(client: Client, request: Request[dict[str, Any], Any]) -> dict[str, Any]:
    """A request the client has no method for, its result as the JSON object it is."""
    result: dict[str, Any] = await client.session.send_request(request, ANY)  # type: ignore[type-var]
    return result


@pytest.fixture(scope="module")
def skills_http() -> Iterator[UvicornProcess]:
    with run_uvicorn(SKILLS) as server:
        yield server


@pytest.fixture(scope="module")
def counter_http() -> Iterator[UvicornProcess]:
    with run_uvicorn(COUNTER) as server:
        yield server


@asynccontextmanager
async def over_stdio(target: str, mode: str, **options: Any) -> AsyncIterator[Client]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "wiremcp", "stdio", target], cwd=ROOT,
                                   env={"PYTHONPATH": str(ROOT), "WIREMCP_LOG_LEVEL": "WARNING"})
    async with Client(stdio_client(params), mode=mode, read_timeout_seconds=WAIT, **options) as client:
        yield client


async def load_every_skill(client: Client) -> list[str]:
    """What a host does: list, then for each skill fetch its entry, read every file, verify each."""
    listed = await ask(client, SkillsList(params={}))
    loaded = []
    for entry in listed["skills"]:
        got = await ask(client, SkillsGet(params={"uri": entry["uri"]}))
        assert got["skill"] == entry
        for file in entry["resources"]:
            (content,) = (await client.read_resource(file["uri"])).contents
            assert isinstance(content, TextResourceContents | BlobResourceContents)
            data = content.text.encode() if isinstance(content, TextResourceContents) else base64.b64decode(content.blob)
            assert (len(data), "sha256:" + hashlib.sha256(data).hexdigest()) == (file["size"], file["digest"])
            if file["uri"] == entry["uri"]:
                front = yaml.safe_load(data.decode().split("---")[1])
                assert front == entry["frontmatter"]
                assert content.mime_type == "text/markdown"
        loaded.append(entry["uri"])
    return loaded


async def browse(client: Client, uri: str) -> list[tuple[str, str | None]]:
    read = await ask(client, DirectoryRead(params={"uri": uri}))
    return [(child["uri"], child.get("mimeType")) for child in read["resources"]]


EXPECTED = ["skill://acme/billing/refunds/SKILL.md", "skill://pdf-processing/SKILL.md"]


@pytest.mark.spec(f"{SEP}#integrity-and-verification")
@pytest.mark.parametrize("mode", MODES)
async def test_a_host_lists_fetches_and_verifies_every_skill_over_http(skills_http: UvicornProcess,
                                                                       mode: str) -> None:
    async with connect(skills_http, mode) as client:
        extensions = client.server_capabilities.extensions or {}
        assert extensions["io.modelcontextprotocol/skills"] == {"directoryRead": True}
        assert await load_every_skill(client) == EXPECTED
        assert await browse(client, "skill://pdf-processing/templates") == [
            ("skill://pdf-processing/templates/invoice.md", "text/markdown"),
            ("skill://pdf-processing/templates/regional", "inode/directory")]
        listed = [r.uri for r in (await client.list_resources()).resources]
    assert listed == EXPECTED


@pytest.mark.spec(f"{SEP}#retrieval-via-skillsget")
@pytest.mark.parametrize("mode", MODES)
async def test_a_host_over_stdio_loads_skills_and_an_unknown_one_is_invalid_params(mode: str) -> None:
    async with over_stdio("examples/skills/server.py", mode) as client:
        assert await load_every_skill(client) == EXPECTED
        assert ("skill://acme/billing", "inode/directory") in await browse(client, "skill://acme")
        with pytest.raises(MCPError) as raised:
            await ask(client, SkillsGet(params={"uri": "skill://nope/SKILL.md"}))
    assert raised.value.code == -32602


@pytest.mark.spec(f"{APPS}#resource-discovery")
@pytest.mark.parametrize("mode", MODES)
async def test_a_host_finds_the_view_of_a_tool_reads_it_and_the_view_calls_its_app_only_tool(
        counter_http: UvicornProcess, mode: str) -> None:
    host = [advertise(UI, {"mimeTypes": ["text/html;profile=mcp-app"]})]
    async with connect(counter_http, mode, extensions=host) as client:
        assert (client.server_capabilities.extensions or {})[UI] == {}
        tools = {t.name: t for t in (await client.list_tools()).tools}
        view = (tools["show_counter"].meta or {})["ui"]["resourceUri"]
        assert (tools["increment"].meta or {})["ui"]["visibility"] == ["app"]
        (page,) = (await client.read_resource(view)).contents
        assert isinstance(page, TextResourceContents)
        assert page.mime_type == "text/html;profile=mcp-app"
        assert page.text == (ROOT / "examples" / "apps" / "counter.html").read_text()
        assert (page.meta or {})["ui"] == {"prefersBorder": True}
        before = (await client.call_tool("show_counter", {})).structured_content
        after = (await client.call_tool("increment", {"by": 2})).structured_content
    assert before is not None
    assert after == {"count": before["count"] + 2}


@pytest.mark.parametrize("mode", MODES)
async def test_the_counter_example_serves_its_view_over_stdio(mode: str) -> None:
    async with over_stdio("examples/apps/server.py", mode) as client:
        (page,) = (await client.read_resource("ui://counter/view.html")).contents
        shown = await client.call_tool("show_counter", {})
    assert isinstance(page, TextResourceContents)
    assert page.text.startswith("<!DOCTYPE html>")
    assert shown.structured_content == {"count": 0}


@pytest.mark.spec(f"{APPS}#ui-resource-format")
async def test_the_python_sdks_own_apps_types_read_what_we_send(tmp_path: Path) -> None:
    """``mcp.server.apps`` (the python-sdk's MCP Apps) parses our ``_meta.ui`` to the same values, and its own
    decorator puts the same ``_meta.ui`` on a tool."""
    from mcp.server.apps import Apps, ResourceCsp, ResourcePermissions

    from wiremcp import MCPServer
    from wiremcp.transports.memory import Client as InProcess

    server = MCPServer("weather")
    server.app("ui://weather/view.html", "<!DOCTYPE html>", connect_domains=["https://api.example.com"],
               resource_domains=["https://*.cdn.example.com"], frame_domains=["https://player.example.com"],
               base_uri_domains=["https://cdn.example.com"], permissions=["camera", "clipboardWrite"],
               domain="a904794854a047f6.example-content.com", prefers_border=False)

    @server.tool(ui="ui://weather/view.html", visibility=["model", "app"])
    def forecast(city: str) -> str:
        return city

    async with InProcess(server) as client:
        (tool,) = await client.list_tools()
        (contents,) = (await client.read_resource("ui://weather/view.html"))["contents"]
    ui = contents["_meta"]["ui"]
    assert ResourceCsp.model_validate(ui["csp"]).model_dump(by_alias=True, exclude_none=True) == ui["csp"]
    assert ResourcePermissions.model_validate(ui["permissions"]).model_dump(
        by_alias=True, exclude_none=True) == ui["permissions"]
    theirs = Apps()

    @theirs.tool(resource_uri="ui://weather/view.html", visibility=["model", "app"])
    def forecast_too(city: str) -> str:
        return city

    (binding,) = theirs._tools
    assert binding[0].meta == {"ui": tool["_meta"]["ui"]}
    assert contents["mimeType"] == "text/html;profile=mcp-app"


LIVE = """from wiremcp import MCPServer

server = MCPServer("live")
server.skills({library!r}, refresh_seconds=0.01)
"""


@pytest.mark.spec(f"{SEP}#retrieval-via-skillsget")
@pytest.mark.parametrize("mode", MODES)
async def test_a_skill_changed_on_disk_is_listed_again_with_its_new_digest(tmp_path: Path, mode: str) -> None:
    notes = tmp_path / "library" / "notes"
    notes.mkdir(parents=True)
    (notes / "SKILL.md").write_text("---\nname: notes\ndescription: Take notes.\n---\nBe brief.\n")
    (notes / "style.md").write_text("short")
    (tmp_path / "server.py").write_text(LIVE.format(library=str(tmp_path / "library")))
    with run_uvicorn(str(tmp_path / "server.py")) as served:
        async with connect(served, mode) as client:
            (before,) = (await ask(client, SkillsList(params={})))["skills"]
            (notes / "style.md").write_text("shorter still")
            now = before
            with anyio.fail_after(WAIT):
                while now == before:  # each request looks at the folder again once 10 ms have passed
                    (now,) = (await ask(client, SkillsList(params={})))["skills"]
            (content,) = (await client.read_resource("skill://notes/style.md")).contents
    style = {r["uri"]: r for r in now["resources"]}["skill://notes/style.md"]
    assert style["digest"] == "sha256:" + hashlib.sha256(b"shorter still").hexdigest()
    assert style["size"] == len("shorter still")
    assert isinstance(content, TextResourceContents)
    assert content.text == "shorter still"


HOST_PAGE = """<!DOCTYPE html>
<html><body>
<iframe id="view" sandbox="allow-scripts allow-same-origin"></iframe>
<pre id="seen"></pre>
<script>
// A host, as small as it can be: it answers the view's ui/initialize, hands it the tool's result, relays its
// tools/call, and (same origin, for the test only) watches what the view shows.
const VIEW = %(view)s, RESULT = %(result)s, AFTER = %(after)s;
const frame = document.getElementById("view"), shown = [], calls = [];
let clicked = false;
window.addEventListener("message", (event) => {
  const m = event.data;
  if (!m || m.jsonrpc !== "2.0") return;
  const reply = (message) => frame.contentWindow.postMessage({jsonrpc: "2.0", ...message}, "*");
  if (m.method === "ui/initialize") {
    reply({id: m.id, result: {protocolVersion: "2026-01-26", hostInfo: {name: "test-host", version: "1"},
                              hostCapabilities: {}, hostContext: {}}});
  } else if (m.method === "ui/notifications/initialized") {
    reply({method: "ui/notifications/tool-result", params: RESULT});
  } else if (m.method === "tools/call") {
    calls.push(m.params);
    reply({id: m.id, result: AFTER});
  }
});
frame.addEventListener("load", () => {
  const doc = frame.contentDocument, count = doc.getElementById("count"), button = doc.getElementById("add");
  const check = () => {
    if (shown[shown.length - 1] !== count.textContent) shown.push(count.textContent);
    if (!clicked && count.textContent === String(RESULT.structuredContent.count)) { clicked = true; button.click(); }
    if (clicked && count.textContent === String(AFTER.structuredContent.count)) {
      document.getElementById("seen").textContent = JSON.stringify({shown, calls});
    }
  };
  new MutationObserver(check).observe(count, {childList: true, characterData: true, subtree: true});
  check();
});
frame.srcdoc = VIEW;
</script>
</body></html>
"""



@contextmanager
def serve_page(page: str) -> Iterator[str]:
    """``page`` at an http://127.0.0.1 URL (a real origin, which a srcdoc view with allow-same-origin shares)."""
    body = page.encode()

    class One(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/html; charset=utf-8")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), One)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.spec(f"{APPS}#data-passing")
async def test_the_example_view_renders_the_tool_result_in_a_headless_browser_and_calls_its_tool(
        counter_http: UvicornProcess, tmp_path: Path) -> None:
    browser = chromium("the MCP Apps browser test")
    async with connect(counter_http, "auto") as client:
        (view,) = (await client.read_resource("ui://counter/view.html")).contents
        result = (await client.call_tool("show_counter", {})).model_dump(by_alias=True, exclude_none=True)
        after = (await client.call_tool("increment", {"by": 1})).model_dump(by_alias=True, exclude_none=True)
    assert isinstance(view, TextResourceContents)
    page = HOST_PAGE % {name: json.dumps(value).replace("</", "<\\/")  # no </script> inside the host's script
                        for name, value in (("view", view.text), ("result", result), ("after", after))}
    with serve_page(page) as url:
        dumped = await anyio.run_process(
            [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=10000", "--dump-dom", url],
            check=False)
    dom = dumped.stdout.decode()
    seen = re.search(r'<pre id="seen">(.*?)</pre>', dom, re.S)
    assert seen is not None, dom[-2000:] + dumped.stderr.decode()[-2000:]
    assert seen.group(1), dom[-2000:] + dumped.stderr.decode()[-2000:]
    observed = json.loads(html.unescape(seen.group(1)))
    count = result["structuredContent"]["count"]
    assert observed["shown"] == ["–", str(count), str(count + 1)]
    assert observed["calls"] == [{"name": "increment", "arguments": {"by": 1}}]
