"""``wiremcp.transports.serving.settings``: ``Settings`` from ``WIREMCP_*`` environment variables, each with
an embedded default: how each kind of value is read (numbers, switches, choices, lists, words), and a
user's mistake as one ``ConfigError`` line (exit status 2, no traceback)."""

from __future__ import annotations

import os
from dataclasses import fields

import pytest

from wiremcp.transports.guard import LOOPBACK_HOSTS
from wiremcp.transports.serving.settings import (
    DEFAULT_SERVER,
    SETTING_NAMES,
    ConfigError,
    Settings,
    unknown_variables,
)

RESOURCE = "https://mcp.example.test/mcp"
ISSUER = "https://as.example.test"


@pytest.fixture(autouse=True)
def _no_wiremcp_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts from an environment without any ``WIREMCP_*`` variable."""
    for name in [n for n in os.environ if n.startswith("WIREMCP_")]:
        monkeypatch.delenv(name)


def test_without_variables_every_setting_is_its_default() -> None:
    settings = Settings.from_env()
    assert settings == Settings()
    assert settings.server == DEFAULT_SERVER
    assert settings.path == "/mcp"
    assert settings.allowed_hosts == LOOPBACK_HOSTS
    assert settings.auth_resource == ""  # no authentication unless asked for


def test_numbers_switches_and_text_are_read_and_trimmed(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {"WIREMCP_MAX_SESSIONS": " 12 ", "WIREMCP_DRAIN_SECONDS": "2.5", "WIREMCP_JSON_RESPONSE": "yes",
                        "WIREMCP_LEGACY_SSE": "OFF", "WIREMCP_METRICS": "0", "WIREMCP_PATH": " /rpc ",
                        "WIREMCP_SERVER": "examples.word_count:server"}.items():
        monkeypatch.setenv(name, value)
    settings = Settings.from_env()
    assert (settings.max_sessions, settings.drain_seconds) == (12, 2.5)
    assert (settings.json_response, settings.legacy_sse, settings.metrics) == (True, False, False)
    assert (settings.path, settings.server) == ("/rpc", "examples.word_count:server")


def test_a_blank_variable_means_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("WIREMCP_MAX_SESSIONS", "WIREMCP_DRAIN_SECONDS", "WIREMCP_METRICS", "WIREMCP_PATH",
                 "WIREMCP_ALLOWED_HOSTS", "WIREMCP_AUTH_SCOPES", "WIREMCP_LOG_LEVEL"):
        monkeypatch.setenv(name, "  ")
    assert Settings.from_env() == Settings()


def test_choices_are_matched_whatever_their_case(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WIREMCP_LOG_LEVEL", "debug")
    monkeypatch.setenv("WIREMCP_LOG_FORMAT", "JSON")
    settings = Settings.from_env()
    assert (settings.log_level, settings.log_format) == ("DEBUG", "json")


def test_lists_are_comma_separated_and_words_by_spaces_or_commas(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WIREMCP_ALLOWED_HOSTS", "mcp.example.com, ,*.internal,")
    monkeypatch.setenv("WIREMCP_AUTH_ALGORITHMS", "RS256,ES256  EdDSA")
    settings = Settings.from_env()
    assert settings.allowed_hosts == ("mcp.example.com", "*.internal")
    assert settings.auth_algorithms == ("RS256", "ES256", "EdDSA")


@pytest.mark.parametrize(("name", "value", "complaint"), [
    ("WIREMCP_MAX_SESSIONS", "many", "WIREMCP_MAX_SESSIONS must be an integer, more than 0, got 'many'"),
    ("WIREMCP_MAX_SESSIONS", "0", "WIREMCP_MAX_SESSIONS must be an integer, more than 0, got '0'"),
    ("WIREMCP_MAX_MESSAGE_BYTES", "-1", "WIREMCP_MAX_MESSAGE_BYTES must be an integer, more than 0, got '-1'"),
    ("WIREMCP_REDIS_WAIT_REPLICAS", "-1", "WIREMCP_REDIS_WAIT_REPLICAS must be an integer, 0 or more, got '-1'"),
    ("WIREMCP_DRAIN_SECONDS", "ten", "WIREMCP_DRAIN_SECONDS must be a number of seconds, 0 or more, got 'ten'"),
    ("WIREMCP_DRAIN_SECONDS", "-1", "WIREMCP_DRAIN_SECONDS must be a number of seconds, 0 or more, got '-1'"),
    ("WIREMCP_DRAIN_SECONDS", "nan", "WIREMCP_DRAIN_SECONDS must be a number of seconds, 0 or more, got 'nan'"),
    ("WIREMCP_SESSION_IDLE_SECONDS", "0",
     "WIREMCP_SESSION_IDLE_SECONDS must be a number of seconds, more than 0, got '0'"),
    ("WIREMCP_PATH", "mcp", "WIREMCP_PATH must be a URL path starting with /, such as /mcp, got 'mcp'"),
    ("WIREMCP_METRICS", "maybe", "WIREMCP_METRICS must be true or false, got 'maybe'"),
    ("WIREMCP_LOG_LEVEL", "LOUD", "WIREMCP_LOG_LEVEL must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL, got 'LOUD'"),
])
def test_a_bad_value_is_a_config_error_naming_the_variable(monkeypatch: pytest.MonkeyPatch, name: str, value: str,
                                                           complaint: str) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError) as caught:
        Settings.from_env()
    assert str(caught.value) == complaint


def test_a_config_error_exits_with_status_2_and_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        ConfigError("WIREMCP_MAX_SESSIONS must be an integer, got 'many'").exit()
    assert exited.value.code == 2
    assert capsys.readouterr().err == "wiremcp: error: WIREMCP_MAX_SESSIONS must be an integer, got 'many'\n"


def test_settings_read_the_auth_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {"WIREMCP_AUTH_RESOURCE": RESOURCE, "WIREMCP_AUTH_ISSUER": ISSUER,
                        "WIREMCP_AUTH_JWKS_URL": ISSUER + "/jwks", "WIREMCP_AUTH_SCOPES": "mcp:tools, mcp:read",
                        "WIREMCP_AUTH_SCOPES_SUPPORTED": "mcp:tools mcp:read mcp:write",
                        "WIREMCP_AUTH_STATIC_TOKENS": "t1=alice:mcp:tools mcp:read,t2=bob",
                        "WIREMCP_AUTH_ALGORITHMS": "RS256 ES256"}.items():
        monkeypatch.setenv(name, value)
    settings = Settings.from_env()
    assert settings.auth_resource == RESOURCE
    assert settings.auth_issuer == ISSUER
    assert settings.auth_jwks_url == ISSUER + "/jwks"
    assert settings.auth_scopes == ("mcp:tools", "mcp:read")
    assert settings.auth_scopes_supported == ("mcp:tools", "mcp:read", "mcp:write")
    assert settings.auth_static_tokens == ("t1=alice:mcp:tools mcp:read", "t2=bob")
    assert settings.auth_algorithms == ("RS256", "ES256")


def test_zero_is_accepted_where_it_means_something(monkeypatch: pytest.MonkeyPatch) -> None:
    """No drain, no cached copy of a session, SSE at once, no waiting for Redis replicas: each a choice."""
    for name in ("WIREMCP_DRAIN_SECONDS", "WIREMCP_SESSION_CACHE_SECONDS", "WIREMCP_SSE_AFTER_SECONDS",
                 "WIREMCP_REDIS_WAIT_REPLICAS"):
        monkeypatch.setenv(name, "0")
    settings = Settings.from_env()
    assert (settings.drain_seconds, settings.session_cache_seconds, settings.sse_after_seconds,
            settings.redis_wait_replicas) == (0, 0, 0, 0)


def test_an_unknown_variable_is_named_with_the_setting_it_probably_meant() -> None:
    environ = {"WIREMCP_SESION_IDLE_SECONDS": "5", "WIREMCP_SESSION_IDLE_SECONDS": "5", "HOME": "/root",
               "WIREMCP_ZZZ": "1", "WIREMCP_BIND": "0.0.0.0", "WIREMCP_NODE_CACHE": "/tmp/node"}
    assert unknown_variables(environ) == [
        "WIREMCP_SESION_IDLE_SECONDS is not a wiremcp setting and is ignored: did you mean "
        "WIREMCP_SESSION_IDLE_SECONDS?",
        "WIREMCP_ZZZ is not a wiremcp setting and is ignored (the settings are listed in the Settings reference of the documentation)",
    ]


def test_the_known_names_are_the_fields_of_settings() -> None:
    assert len(SETTING_NAMES) == len(fields(Settings))
    assert "WIREMCP_SESSION_IDLE_SECONDS" in SETTING_NAMES
    assert not unknown_variables(dict.fromkeys(SETTING_NAMES, "x"))
