"""Logs: JSON lines with the session and request ids in scope, credentials masked (records keeping the
shape their formatters need, uvicorn's access log included), stderr only."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

import httpx
import pytest
from uvicorn.logging import AccessFormatter, DefaultFormatter

from tests.support.http import READ_BOUND, START_BOUND, _wait_until_accepting, free_port, stop_process
from wiremcp.logs import (
    REDACTED,
    REQUEST_ID,
    SESSION_ID,
    TEXT_FORMAT,
    JSONFormatter,
    RedactSecrets,
    formatter,
    redact,
)
from wiremcp.transports.serving.settings import Settings

ROOT = Path(__file__).resolve().parents[2]


def _record(message: str, *args: object, exc: bool = False) -> logging.LogRecord:
    exc_info = None
    if exc:
        try:
            raise ValueError("Authorization: Bearer in-a-traceback-123")
        except ValueError:
            exc_info = sys.exc_info()
    return logging.LogRecord("wiremcp.test", logging.WARNING, __file__, 1, message, args or None, exc_info)


def test_json_lines_carry_the_session_and_request_in_scope() -> None:
    plain = json.loads(JSONFormatter().format(_record("hello %s", "there")))
    assert plain["message"] == "hello there"
    assert plain["level"] == "WARNING"
    assert plain["logger"] == "wiremcp.test"
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
    monkeypatch.setenv("WIREMCP_LOG_FORMAT", "JSON")
    assert Settings.from_env().log_format == "json"
    assert isinstance(formatter("json"), JSONFormatter)
    with pytest.raises(ValueError, match="WIREMCP_LOG_FORMAT"):
        formatter("xml")


def test_setup_logs_json_on_stderr_and_nothing_on_stdout() -> None:
    code = ("import logging\nfrom wiremcp.logs import setup_logging\nsetup_logging('INFO', 'json')\n"
            "logging.getLogger('wiremcp.x').info('got Authorization: Bearer abcdefgh12345')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert done.stdout == ""
    line = json.loads(done.stderr)
    assert line["message"] == f"got Authorization: Bearer {REDACTED}"
    assert line["logger"] == "wiremcp.x"


# -- records keep their shape: uvicorn's access log -------------------------------------------------------

ACCESS_FORMAT = '%(levelprefix)s %(client_addr)s - "%(request_line)s" %(status_code)s'
SECRET = "abc123secret"


def _access_record(path: str, method: str = "GET") -> logging.LogRecord:
    """A record as uvicorn's HTTP protocols log a request: five arguments that its formatter unpacks."""
    return logging.LogRecord("uvicorn.access", logging.INFO, __file__, 1, '%s - "%s %s HTTP/%s" %d',
                             ("127.0.0.1:50000", method, path, "1.1", 200), None)


def test_an_access_record_keeps_its_arguments_for_uvicorns_formatter() -> None:
    record = _access_record(f"/healthz?token={SECRET}&access_token={SECRET}&code={SECRET}&x=1")
    assert RedactSecrets().filter(record)
    assert isinstance(record.args, tuple)
    assert len(record.args) == 5
    line = AccessFormatter(ACCESS_FORMAT, use_colors=False).format(record)
    assert line == (f'INFO:     127.0.0.1:50000 - "GET /healthz?token={REDACTED}&access_token={REDACTED}'
                    f'&code={REDACTED}&x=1 HTTP/1.1" 200 OK')
    as_json = json.loads(JSONFormatter().format(record))
    assert as_json["message"] == (f'127.0.0.1:50000 - "GET /healthz?token={REDACTED}&access_token={REDACTED}'
                                  f'&code={REDACTED}&x=1 HTTP/1.1" 200')
    assert SECRET not in line + json.dumps(as_json)


def test_an_access_record_whose_secret_spans_its_arguments_still_formats() -> None:
    """Method and path together read like a bearer token: the line loses its strings, not its shape."""
    record = _access_record("/abcdefgh12345", method="BEARER")
    assert RedactSecrets().filter(record)
    line = AccessFormatter(ACCESS_FORMAT, use_colors=False).format(record)
    assert "abcdefgh12345" not in line
    assert line.endswith("200 OK")


def test_uvicorns_coloured_message_formats_with_the_masked_arguments() -> None:
    record = logging.LogRecord("uvicorn.error", logging.INFO, __file__, 1, "client sent %s", (f"Bearer {SECRET}",),
                               None)
    record.color_message = "client sent \x1b[1m%s\x1b[0m"
    assert RedactSecrets().filter(record)
    line = DefaultFormatter("%(levelprefix)s %(message)s", use_colors=True).format(record)
    assert f"Bearer {REDACTED}" in line
    assert SECRET not in line


@pytest.mark.parametrize(("message", "args", "expected"), [
    # the secret in an argument: only the argument changes
    ("refused %s", (f"Authorization: Bearer {SECRET}",), f"refused Authorization: Bearer {REDACTED}"),
    ("GET %(path)s", ({"path": f"/mcp?code={SECRET}"},), f"GET /mcp?code={REDACTED}"),
    # the secret in the template: the template changes, its placeholders stay
    (f"Authorization: Bearer {SECRET} for %s", ("bob",), f"Authorization: Bearer {REDACTED} for bob"),
    # the secret spans template and argument, or masking the template would eat a placeholder
    ("GET /mcp?%s", (f"token={SECRET}",), f"GET /mcp?token={REDACTED}"),
    ("GET /mcp?token=%s&n=%d", (SECRET, 5), f"GET /mcp?token={REDACTED}&n=5"),
    # the secret in an argument that is not a string
    ("headers %s", ([(b"authorization", f"Bearer {SECRET}".encode())],),
     f"headers [(b'authorization', b'Bearer {REDACTED}')]"),
])
def test_the_filter_masks_wherever_the_secret_is(message: str, args: Any, expected: str) -> None:
    record = logging.LogRecord("wiremcp.test", logging.WARNING, __file__, 1, message, args, None)
    assert RedactSecrets().filter(record)
    assert record.getMessage() == expected
    assert json.loads(JSONFormatter().format(record))["message"] == expected
    assert logging.Formatter(TEXT_FORMAT).format(record).endswith(expected)


def test_a_clean_record_is_left_alone() -> None:
    args = ("127.0.0.1:50000", "GET", "/healthz?x=1", "1.1", 200)
    record = logging.LogRecord("uvicorn.access", logging.INFO, __file__, 1, '%s - "%s %s HTTP/%s" %d', args, None)
    assert RedactSecrets().filter(record)
    assert record.args is args


def _start_uvicorn(env: dict[str, str], stdout: IO[bytes], stderr: IO[bytes]) -> tuple[subprocess.Popen[bytes], int]:
    """``python -m uvicorn app:asgi`` with uvicorn's own logging and its access log on (run_uvicorn turns it off)."""
    for _ in range(3):  # another process may take the free port between probe and bind
        port = free_port()
        proc = subprocess.Popen([sys.executable, "-m", "uvicorn", "app:asgi", "--host", "127.0.0.1", "--port", str(port),
                                 "--timeout-graceful-shutdown", "2"], cwd=ROOT, env=env, stdout=stdout, stderr=stderr)
        if _wait_until_accepting(proc, "127.0.0.1", port, time.monotonic() + START_BOUND):
            return proc, port
    raise RuntimeError("uvicorn did not start")


@pytest.mark.parametrize("log_format", ["text", "json"])
def test_uvicorn_access_log_masks_query_secrets(log_format: str) -> None:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("WIREMCP_")},
           "WIREMCP_SERVER": "examples.word_count:server", "WIREMCP_LOG_FORMAT": log_format,
           "PYTHONDONTWRITEBYTECODE": "1"}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc, port = _start_uvicorn(env, out, err)
        try:
            answer = httpx.get(f"http://127.0.0.1:{port}/healthz?token={SECRET}&access_token={SECRET}&x=1",
                               timeout=READ_BOUND)
            assert answer.status_code == 200
        finally:
            stop_process(proc)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    assert stdout == ""
    assert "Logging error" not in stderr, stderr
    assert SECRET not in stderr, stderr
    access = [line for line in stderr.splitlines() if "GET /healthz" in line]
    assert len(access) == 1, stderr
    assert f"/healthz?token={REDACTED}&access_token={REDACTED}&x=1 HTTP/1.1" in access[0]
    if log_format == "json":
        assert json.loads(access[0])["logger"] == "uvicorn.access"
    else:
        assert access[0].endswith('" 200 OK')
