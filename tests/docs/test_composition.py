"""``docs/composition.md``, run."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.docs_pages import DOCS, exec_as_file
from tests.support.feature_examples import check_mount_example

pytestmark = pytest.mark.timeout(120)

PAGE = DOCS / "composition.md"
CHECKED = {"mount"}


async def test_the_composition_page_serves_the_child_under_its_prefix(tmp_path: Path) -> None:
    server = exec_as_file(PAGE, "mount", tmp_path / "server.py")["server"]
    await check_mount_example(server)
