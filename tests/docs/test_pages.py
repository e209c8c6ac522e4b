"""Every page under ``docs/``, held to what a reader and the documentation site (MkDocs) need: every wiremcp code
block a reader may copy is run by the page's test module, one H1 per page, relative links that reach a page and a
heading, no tracker text.

Each fenced block of a page is preceded by a marker ``<!-- docs: NAME -->``. A block named in the ``CHECKED`` of
the page's test module (``docs/a-b.md``: ``tests/docs/test_a_b.py``) is run there: a server definition executed
as the file a reader would save and exercised with the in-memory ``Client``, a command run as typed. A block
whose marker starts with ``before`` is the other framework's code, shown to compare with, and is not run; one
that starts with ``not run`` says why in the marker.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.docs_pages import DOCS, ROOT, blocks, checked, headings, module_of, slug

PAGES = sorted(DOCS.rglob("*.md"))


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(DOCS)))
def test_every_block_is_run_or_says_why_not(page: Path) -> None:
    found = blocks(page)
    unmarked = [b.line for b in found if not b.name]
    assert not unmarked, f"{page.name}: blocks without a <!-- docs: NAME --> marker, at lines {unmarked}"
    runs = checked(page)
    for b in found:
        if b.name.startswith("before"):
            assert b.language == "python", f"{page.name}:{b.line}: a 'before' block is the other framework's Python"
        elif b.name not in runs:
            where = f"{page.name}:{b.line}: block {b.name!r}"
            assert b.language != "python", f"{where} is run by no check in {module_of(page).name}"
            assert b.name.startswith("not run"), f"{where} is run by no check and does not say why"
    names = [b.name for b in found]
    assert sorted(n for n in names if n in runs) == sorted(runs), "a check lost its block"
    assert len(set(names)) == len(names) or all(n.startswith(("not run", "before")) for n in names
                                                  if names.count(n) > 1), "two blocks of one name"


def test_every_test_module_of_a_page_has_its_page() -> None:
    strays = [str(m.relative_to(ROOT)) for m in sorted((ROOT / "tests" / "docs").rglob("test_*.py"))
              if m.name != "test_pages.py" and m.name != "test_site.py" and m not in map(module_of, PAGES)]
    assert not strays, f"named after no page: {strays}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(DOCS)))
def test_each_page_has_one_title_and_links_that_reach_a_page_and_a_heading(page: Path) -> None:
    text = page.read_text()
    found = headings(text)
    assert [h for h in found if h[0] == 1] == [found[0]], "one H1, first"
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"https?://", target):
            continue
        file, _, anchor = target.partition("#")
        linked = (page.parent / file) if file else page
        assert linked.is_file(), f"{page.name}: the link {target} reaches no page"
        if anchor:
            assert anchor in [slug(h) for _, h in headings(linked.read_text())], f"{page.name}: no heading {target}"


@pytest.mark.parametrize("page", [*PAGES, ROOT / "README.md"], ids=lambda p: str(p.relative_to(ROOT)))
def test_no_tracker_text_in_what_users_read(page: Path) -> None:
    """No issue numbers, commit hashes or "the issue's targets": a reader has no tracker."""
    text = page.read_text()
    assert not re.search(r"\bissues? \d|#\d{2,}\b|the issue's", text, flags=re.I), page.name
    assert not re.search(r"\b(?:commit|baseline|at) `?[0-9a-f]{7,40}\b", text), page.name
