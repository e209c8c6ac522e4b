"""The documentation site builds: ``mkdocs build --strict`` (any warning fails it: a broken link, a name the
API reference cannot find, a generated marker without a generator) with the reference pages generated from
the code by ``docs/hooks.py``: the command line's help, the settings, the API of the exported names.

The built site is then served on 127.0.0.1 and opened in headless Chromium (over DevTools, and ``--screenshot``):
every page reachable from Home loads, and nothing a page asks for (assets included) is missing."""

from __future__ import annotations

import functools
import html
import http.server
import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urldefrag, urlsplit

import pytest
import yaml

from tests.support.browser import DevTools
from tests.support.parts import chromium
from wiremcp.transports.serving.cli import parser
from wiremcp.transports.serving.settings import SETTING_NAMES

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.timeout(120)

FOR = "the documentation site's browser test"
"""What Chromium is needed for, said when it is missing."""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built once for this module's tests."""
    out = tmp_path_factory.mktemp("site")
    build = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)], cwd=ROOT,
                           capture_output=True, text=True, timeout=90, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert build.returncode == 0, build.stdout + build.stderr
    return out


def _page(site: Path, path: str) -> str:
    return html.unescape((site / path).read_text())


def test_the_site_has_every_page(site: Path) -> None:
    for page in sorted((ROOT / "docs").rglob("*.md")):
        relative = page.relative_to(ROOT / "docs").with_suffix("")
        built = site / ("index.html" if relative.name == "index" else relative / "index.html")
        assert built.is_file(), built
    assert not (site / "hooks.py").exists(), "the hook is the build's, not a file of the site"


def test_the_navigation_opens_with_getting_started_then_the_features() -> None:
    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]
    titles = [next(iter(entry)) for entry in nav]
    assert titles[:4] == ["Home", "Getting started", "Features", "Running it"]
    features = [next(iter(entry.values())) for entry in nav[titles.index("Features")]["Features"]]
    assert {"tools.md", "errors.md", "middleware.md", "rate-limits.md", "composition.md"} <= set(features)


def test_the_cli_reference_is_the_parsers_help(site: Path) -> None:
    page = _page(site, "reference/cli/index.html")
    subcommands = next(a for a in parser()._actions if a.dest == "command").choices
    assert subcommands
    for name in subcommands:
        assert f"usage: wiremcp {name}" in page, name
    assert "--reload" in page


def test_the_settings_reference_lists_every_setting(site: Path) -> None:
    page = _page(site, "reference/settings/index.html")
    missing = sorted(name for name in SETTING_NAMES if name not in page)
    assert not missing, missing
    assert "WIREMCP_REDIS_URL" in page
    assert "A Redis (or Valkey) server" in page  # the field's docstring


def test_the_api_reference_documents_the_exported_names(site: Path) -> None:
    page = _page(site, "reference/api/index.html")
    for package, name in (("wiremcp", "MCPServer"), ("wiremcp", "Context"), ("wiremcp", "ToolError"),
                          ("wiremcp.transports", "Client"), ("wiremcp.transports", "MCPHttpApp"),
                          ("wiremcp.auth", "BearerAuth"), ("wiremcp.auth", "JWKSVerifier")):
        # each documented at its defining module, e.g. id="wiremcp.server.MCPServer"
        assert re.search(rf'id="{re.escape(package)}\.\w+\.{name}"', page), name



@dataclass
class ServedSite:
    """The built site at ``url`` (http://127.0.0.1:<port>/), and every request it answered: (path, status)."""

    url: str
    answered: list[tuple[str, int]] = field(default_factory=list)

    def status(self, path: str) -> int | None:
        """The status of the first request for ``path`` (query included), or None if none came."""
        return next((code for asked, code in self.answered if asked == path), None)


@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[ServedSite]:
    """The built site over http on a port the system picks (a free one), as a browser reads it (``mkdocs serve`` would rebuild it)."""
    served = ServedSite("")

    class SiteFiles(http.server.SimpleHTTPRequestHandler):
        def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
            served.answered.append((self.path, int(code)))

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(SiteFiles, directory=str(site)))
    served.url = f"http://127.0.0.1:{server.server_address[1]}/"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield served
    finally:
        server.shutdown()
        server.server_close()


def _browse(profile: Path, url: str, *options: str) -> subprocess.CompletedProcess[str]:
    """Headless Chromium on ``url`` with ``options`` (``--dump-dom`` prints the DOM once the page has loaded)."""
    return subprocess.run(
        [chromium(FOR), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
         f"--user-data-dir={profile}", "--virtual-time-budget=10000", *options, url],
        capture_output=True, text=True, timeout=60, check=False)


LOADED_LINKS = """new Promise(resolve => {  // once the page has loaded: the address of every link on it
  const links = () => resolve([...document.querySelectorAll("a[href]")].map(a => a.href));
  if (document.readyState === "complete") links(); else addEventListener("load", links);
})"""


@pytest.mark.timeout(180)
def test_every_page_linked_from_home_loads_in_a_browser_with_all_it_asks_for(served: ServedSite,
                                                                                tmp_path: Path) -> None:
    """One headless Chromium, driven over DevTools, opens Home and every page reachable from it by links, each
    once: each loads, and nothing any page asks for (its assets included) is missing."""
    browser = DevTools(tmp_path / "profile", deadline=time.monotonic() + 150, needed_for=FOR)
    site = urlsplit(served.url).netloc
    seen, queue = {served.url}, [served.url]
    try:
        tab = browser.call("Target.createTarget", url="about:blank")["targetId"]
        session = browser.call("Target.attachToTarget", targetId=tab, flatten=True)["sessionId"]
        while queue:  # breadth first from Home
            page = queue.pop(0)
            browser.call("Page.navigate", session, url=page)  # answered once the navigation has committed
            links = browser.call("Runtime.evaluate", session, expression=LOADED_LINKS, awaitPromise=True,
                                 returnByValue=True)["result"]["value"]
            path = urlsplit(page)._replace(scheme="", netloc="").geturl()  # as the request line has it
            assert served.status(path) == 200, (page, served.status(path))
            for link in sorted({urldefrag(link).url for link in links if urlsplit(link).netloc == site} - seen):
                seen.add(link)
                queue.append(link)
    finally:
        browser.close()
    pages = {urlsplit(url).path for url in seen}
    print(f"crawled {len(pages)} pages, {len(served.answered)} requests, none missing")
    assert {"/", "/rate-limits/", "/reference/api/", "/reference/settings/", "/getting-started/"} <= pages, pages
    assert {f"/{p.relative_to(ROOT / 'docs').with_suffix('')}/".replace("/index/", "/") for p in
            (ROOT / "docs").rglob("*.md")} <= pages, "every page is reachable from Home"
    not_found = sorted({path for path, code in served.answered if code >= 400})
    assert not not_found, not_found
    assert any(path.startswith("/assets/") for path, _ in served.answered)  # the theme's files were asked for


SEARCH_RESULTS = """new Promise(resolve => {  // the result links once there are some, or none by the deadline
  const deadline = Date.now() + %d;
  (function look() {
    const links = [...document.querySelectorAll(".md-search-result__list a")].map(a => a.href);
    if (links.length || Date.now() > deadline) resolve(links); else setTimeout(look, 50);
  })();
})"""


def test_searching_from_the_address_finds_the_rate_limits_page(served: ServedSite, tmp_path: Path) -> None:
    # Material opens the search with the query of ?q= (no theme feature needed) and its web worker answers
    # after the page's load, when --dump-dom has already printed the DOM: the results are read over DevTools.
    browser = DevTools(tmp_path / "profile", deadline=time.monotonic() + 45, needed_for=FOR)
    try:
        page = browser.call("Target.createTarget", url="about:blank")["targetId"]
        session = browser.call("Target.attachToTarget", targetId=page, flatten=True)["sessionId"]
        browser.call("Page.navigate", session, url=served.url + "rate-limits/?q=rate+limit")  # once committed
        found = browser.call("Runtime.evaluate", session, expression=SEARCH_RESULTS % 30_000, awaitPromise=True,
                             returnByValue=True)["result"]["value"]
    finally:
        browser.close()
    assert found, "no search results"
    assert urlsplit(found[0]).path == "/rate-limits/", found  # the page itself first
    assert served.status("/search/search_index.json") == 200


def test_the_search_index_has_the_rate_limits_page(site: Path) -> None:
    index = json.loads((site / "search" / "search_index.json").read_text())
    entries = [doc for doc in index["docs"] if doc["location"].split("#")[0] == "rate-limits/"]
    assert any(doc["title"] == "Rate limits" for doc in entries), entries
    assert any("rate limit" in (doc["title"] + " " + doc["text"]).lower() for doc in entries)


@pytest.mark.parametrize("page", ["", "rate-limits/", "reference/api/"])
def test_a_screenshot_of_the_page_is_an_image_with_content(served: ServedSite, tmp_path: Path, page: str) -> None:
    shot = tmp_path / f"{page.strip('/').replace('/', '-') or 'home'}.png"
    taken = _browse(tmp_path / "profile", served.url + page, f"--screenshot={shot}", "--window-size=1280,900")
    assert taken.returncode == 0, taken.stderr[-2000:]
    assert shot.is_file(), taken.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert shot.stat().st_size > 10_000, shot.stat().st_size  # a blank 1280x900 PNG is a few KB
    print(f"screenshot of /{page}: {shot} ({shot.stat().st_size} bytes)")


def test_the_site_loads_nothing_from_another_host(site: Path) -> None:
    """No stylesheet, script, font or image of another host: the site reads offline and tells no one it is read
    (Material's default Google Fonts are off: ``font: false``)."""
    loads = re.compile(r"<(?:link|script|img|iframe)\b[^>]*?\s(?:href|src)=\"(https?:)?//", re.I)
    offenders = [str(page.relative_to(site)) for page in site.rglob("*.html")
                 if any("rel=\"canonical\"" not in m.group(0) and "rel=canonical" not in m.group(0)
                        for m in loads.finditer(page.read_text()))]
    assert not offenders, offenders
