"""The documentation site builds: ``mkdocs build --strict`` (any warning fails it: a broken link, a name the
API reference cannot find, a generated marker without a generator) with the reference pages generated from
the code by ``docs/hooks.py``: the command line's help, the settings, the API of the exported names."""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

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
