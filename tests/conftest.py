"""Shared test configuration (helpers live in tests/support/http.py and next to the tests that use them)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support import hang_report, parts
from tests.support.oauth_flow import Provider, provider
from tests.support.redis_fixtures import (  # noqa: F401 - the fixtures of every test that uses a real Redis
    redis_binary,
    redis_clients,
    redis_cluster,
    redis_keys,
    redis_sentinel,
    redis_server,
    redis_url,
)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(parts.OPTION, action="store_true", default=False,
                     help="fail, rather than skip, a test whose real part (Chromium, npm, curl, a system "
                          "redis-server 7 or later) is missing; .ci/run sets it")


def pytest_configure(config: pytest.Config) -> None:
    parts.required = bool(config.getoption(parts.OPTION))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """A test about to time out writes where its asyncio tasks wait (``hang_report``)."""
    marker = item.get_closest_marker("timeout")
    timeout = float(marker.args[0]) if marker is not None and marker.args else float(item.config.getini("timeout"))
    with hang_report.reported_before(timeout, item.nodeid):
        yield


@pytest.fixture(scope="session")
def oauth_provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Provider]:
    """A real OpenID Connect provider (django-oauth-toolkit) for the OAuth server's tests, one per worker, and the
    socket the OAuth server under test serves on (``tests/support/oauth_flow.py``)."""
    with provider(tmp_path_factory.mktemp("oidc-provider")) as running:
        yield running


@pytest.fixture(scope="session")
def oauth2_provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Provider]:
    """The same provider as a plain OAuth 2 one (GitHub's shape: no discovery, no ID token)."""
    with provider(tmp_path_factory.mktemp("oauth2-provider"), mode="oauth2") as running:
        yield running
