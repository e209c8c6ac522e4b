"""Logs: JSON lines with the session and request ids in scope, credentials masked, stderr only."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from app.logs import REDACTED, REQUEST_ID, SESSION_ID, JSONFormatter, RedactSecrets, formatter, redact
from app.settings import Settings

ROOT = Path(__file__).resolve().parents[2]


def _record(message: str, *args: object, exc: bool = False) -> logging.LogRecord:
    exc_info = None
    if exc:
        try:
            raise ValueError("Authorization: Bearer in-a-traceback-123")
        except ValueError:
            exc_info = sys.exc_info()
    return logging.LogRecord("mcpwire.test", logging.WARNING, __file__, 1, message, args or None, exc_info)


def test_json_lines_carry_the_session_and_request_in_scope() -> None:
    plain = json.loads(JSONFormatter().format(_record("hello %s", "there")))
    assert plain["message"] == "hello there"
    assert plain["level"] == "WARNING"
    assert plain["logger"] == "mcpwire.test"
    assert "session_id" not in plain
    assert "request_id" not in plain
    session, request = SESSION_ID.set("s-1"), REQUEST_ID.set(42)
    try:
        scoped = json.loads(JSONFormatter().format(_record("inside")))
    finally:
        REQUEST_ID.reset(request)
        SESSION_ID.reset(session)
    assert (scoped["session_id"], scoped["request_id"]) == ("s-1", 42)


@pytest.mark.parametrize(("text", "expected"), [
    ("Authorization: Bearer eyJhbGciOi.abc.def", f"Authorization: Bearer {REDACTED}"),
    ("headers [(b'authorization', b'Bearer t1')]", f"headers [(b'authorization', b'Bearer {REDACTED}')]"),
    ("{'Authorization': 'Basic dXNlcjpwYXNz'}", f"{{'Authorization': 'Basic {REDACTED}'}}"),
    ("sent bearer abcdefgh12345 again", f"sent bearer {REDACTED} again"),
    ("GET /mcp?access_token=sekret&x=1 HTTP/1.1", f"GET /mcp?access_token={REDACTED}&x=1 HTTP/1.1"),
    ("a bearer token is required", "a bearer token is required"),
    ("the Authorization header must be 'Bearer <token>'", "the Authorization header must be 'Bearer <token>'"),
])
def test_credentials_are_masked(text: str, expected: str) -> None:
    assert redact(text) == expected


def test_the_filter_masks_messages_arguments_and_tracebacks() -> None:
    record = _record("refused %s", "Authorization: Bearer secret-token-1", exc=True)
    assert RedactSecrets().filter(record)
    assert record.getMessage() == f"refused Authorization: Bearer {REDACTED}"
    assert record.exc_text is not None
    assert "in-a-traceback-123" not in record.exc_text
    out = json.loads(JSONFormatter().format(record))
    assert "secret-token-1" not in json.dumps(out)
    assert "ValueError" in out["exception"]


def test_the_format_is_text_or_json(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings().log_format == "text"
    monkeypatch.setenv("MCPWIRE_LOG_FORMAT", "JSON")
    assert Settings.from_env().log_format == "json"
    assert isinstance(formatter("json"), JSONFormatter)
    with pytest.raises(ValueError, match="MCPWIRE_LOG_FORMAT"):
        formatter("xml")


def test_setup_logs_json_on_stderr_and_nothing_on_stdout() -> None:
    code = ("import logging\nfrom app.logs import setup_logging\nsetup_logging('INFO', 'json')\n"
            "logging.getLogger('mcpwire.x').info('got Authorization: Bearer abcdefgh12345')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert done.stdout == ""
    line = json.loads(done.stderr)
    assert line["message"] == f"got Authorization: Bearer {REDACTED}"
    assert line["logger"] == "mcpwire.x"
