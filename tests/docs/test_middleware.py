"""``docs/middleware.md``, run."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.docs_pages import DOCS, exec_as_file
from tests.support.feature_examples import check_middleware_example

pytestmark = pytest.mark.timeout(120)

PAGE = DOCS / "middleware.md"
CHECKED = {"middleware"}


async def test_the_middleware_page_rewrites_filters_and_logs(tmp_path: Path,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    server = exec_as_file(PAGE, "middleware", tmp_path / "server.py")["server"]
    await check_middleware_example(server, caplog)
