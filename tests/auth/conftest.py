"""Fixtures of the auth tests: ``up``, the development authorization server behind an upstream whose
failures a test chooses (``tests.support.upstream``)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.support.upstream import Upstream, upstream


@pytest.fixture
async def up() -> AsyncIterator[Upstream]:
    async with upstream() as out:
        yield out
