"""The documentation site builds: ``mkdocs build --strict`` (any warning fails it: a broken link, a name the
API reference cannot find, a generated marker without a generator) with the reference pages generated from
the code by ``docs/hooks.py``: the command line's help, the settings, the API of the exported names.

The built site is then served on 127.0.0.1 and opened in headless Chromium (``--dump-dom``, ``--screenshot``):
every page reachable from Home loads, and nothing a page asks for (assets included) is missing."""

from __future__ import annotations

import functools
import html
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urldefrag, urljoin, urlsplit

import pytest
import yaml

from tests.support.parts import missing
from wiremcp.transports.serving.cli import parser
from wiremcp.transports.serving.settings import SETTING_NAMES

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.timeout(120)


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
    for page in ("index.html", "getting-started/index.html", "middleware/index.html", "rate-limits/index.html",
                 "composition/index.html", "coming-from-fastmcp/index.html",
                 "coming-from-the-official-sdk/index.html", "reference/cli/index.html",
                 "reference/settings/index.html", "reference/api/index.html"):
        assert (site / page).is_file(), page
    assert not (site / "hooks.py").exists(), "the hook is the build's, not a file of the site"


def test_the_feature_pages_are_a_features_section_after_getting_started() -> None:
    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]
    titles = [next(iter(entry)) for entry in nav]
    assert titles.index("Features") == titles.index("Getting started") + 1
    assert nav[titles.index("Features")]["Features"] == [
        {"Middleware": "middleware.md"}, {"Rate limits": "rate-limits.md"}, {"Composing servers": "composition.md"}]


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


def chromium() -> str:
    return shutil.which("chromium") or shutil.which("chromium-browser") or missing(
        "no chromium on PATH for the documentation site's browser test (Debian: apt-get install chromium)")


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
        [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
         f"--user-data-dir={profile}", "--virtual-time-budget=10000", *options, url],
        capture_output=True, text=True, timeout=60, check=False)


ANCHOR_HREF = re.compile(r"<a\b[^>]*?\shref=\"([^\"]*)\"")


def _internal_links(served: ServedSite, page: str, dom: str) -> set[str]:
    """The pages ``dom`` (the page at ``page``) links to on the served site, each without its #fragment."""
    links = set()
    for href in map(html.unescape, ANCHOR_HREF.findall(dom)):
        if not href or href.startswith("#"):
            continue
        target = urldefrag(urljoin(page, href)).url
        if urlsplit(target).netloc == urlsplit(served.url).netloc:
            links.add(target)
    return links


def test_every_page_linked_from_home_loads_in_a_browser_with_all_it_asks_for(served: ServedSite,
                                                                                tmp_path: Path) -> None:
    chromium()
    seen, queue = {served.url}, [served.url]
    while queue:  # breadth first from Home, each page once
        page = queue.pop(0)
        dumped = _browse(tmp_path / "profile", page, "--dump-dom")
        assert dumped.returncode == 0, page + dumped.stderr[-2000:]
        assert "</html>" in dumped.stdout, page + dumped.stderr[-2000:]
        path = urlsplit(page)._replace(scheme="", netloc="").geturl()  # as the request line has it
        assert served.status(path) == 200, (page, served.status(path))
        for link in sorted(_internal_links(served, page, dumped.stdout) - seen):
            seen.add(link)
            queue.append(link)
    pages = {urlsplit(url).path for url in seen}
    print(f"crawled {len(pages)} pages, {len(served.answered)} requests, none missing")
    assert {"/", "/rate-limits/", "/reference/api/", "/reference/settings/", "/getting-started/"} <= pages, pages
    not_found = sorted({path for path, code in served.answered if code >= 400})
    assert not not_found, not_found
    assert any(path.startswith("/assets/") for path, _ in served.answered)  # the theme's files were asked for


def test_the_search_index_finds_the_rate_limits_page(site: Path) -> None:
    # The search runs in a web worker whose results come after the page's load, when --dump-dom has already
    # printed the DOM (the results list is empty there, whatever the virtual time budget): the index the worker
    # searches is checked instead.
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
