"""``docs/index.md``, the home page: it leads to every page of the site."""

from __future__ import annotations

import yaml

from tests.support.docs_pages import DOCS, ROOT

PAGE = DOCS / "index.md"
CHECKED: set[str] = set()


def _nav_pages(entries: list[object]) -> list[str]:
    out: list[str] = []
    for entry in entries:
        assert isinstance(entry, dict)
        (value,) = entry.values()
        out += _nav_pages(value) if isinstance(value, list) else [str(value)]
    return out


def test_the_home_page_links_every_page_of_the_navigation() -> None:
    text = PAGE.read_text()
    pages = _nav_pages(yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"])
    missing = [page for page in pages if page != "index.md" and f"]({page})" not in text]
    assert not missing, missing
