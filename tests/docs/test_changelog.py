"""``docs/changelog.md``: its newest entry is the version the package is built as."""

from __future__ import annotations

import re
import tomllib

from tests.support.docs_pages import DOCS, ROOT, headings

PAGE = DOCS / "changelog.md"


def test_the_newest_entry_is_the_packages_version() -> None:
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    entries = [text for level, text in headings(PAGE.read_text()) if level == 2]
    assert re.match(rf"{re.escape(version)}\b", entries[0]), (entries[0], version)
