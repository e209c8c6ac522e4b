"""The framework's logs: on stderr, as text or JSON lines, with the session and request they belong to,
and never a credential.

``SESSION_ID`` is set by the HTTP transport from the ``Mcp-Session-Id`` header, ``REQUEST_ID`` by
``answer()`` around each request; the JSON formatter adds both to every record logged in their scope.
``RedactSecrets`` masks bearer tokens and ``Authorization`` values wherever a message carries one.
"""

from __future__ import annotations

import logging
import re
import sys
from contextvars import ContextVar
from datetime import UTC, datetime

import orjson

from app.types import RequestId

SESSION_ID: ContextVar[str | None] = ContextVar("mcpwire_session_id", default=None)
"""The handshake-era session of the HTTP request being served."""
REQUEST_ID: ContextVar[RequestId | None] = ContextVar("mcpwire_request_id", default=None)
"""The JSON-RPC id of the request being answered."""

LOG_FORMATS = ("text", "json")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

_SECRETS = (
    # an Authorization header or field, however it is printed: its value (after any scheme word)
    re.compile(r"""(?i)(\bauthorization\b["']?\s*[:=,]\s*b?["']?(?:[a-z]+\s+)?)([^\s"',;]+)"""),
    # a bearer token anywhere (8 characters at least, so that "a bearer token" stays readable)
    re.compile(r"(?i)(\bbearer\s+)([a-z0-9\-._~+/]{8,}=*)"),
    # a token or secret in a query string
    re.compile(r"""(?i)([?&](?:access_token|refresh_token|id_token|token|client_secret|code)=)([^&\s"']+)"""),
)
REDACTED = "[REDACTED]"


def redact(text: str) -> str:
    """``text`` with every bearer token, ``Authorization`` value and token query parameter masked."""
    for pattern in _SECRETS:
        text = pattern.sub(lambda m: m.group(1) + REDACTED, text)
    return text


class RedactSecrets(logging.Filter):
    """Masks credentials in a record's message and traceback before any handler formats it."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True


class JSONFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, and the session and request ids when known."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        session_id = SESSION_ID.get()
        if session_id is not None:
            out["session_id"] = session_id
        request_id = REQUEST_ID.get()
        if request_id is not None:
            out["request_id"] = request_id
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            out["exception"] = record.exc_text
        if record.stack_info:
            out["stack"] = self.formatStack(record.stack_info)
        return orjson.dumps(out, default=str).decode()


def formatter(log_format: str) -> logging.Formatter:
    if log_format not in LOG_FORMATS:
        raise ValueError(f"MCPWIRE_LOG_FORMAT must be one of {', '.join(LOG_FORMATS)}, got {log_format!r}")
    return JSONFormatter() if log_format == "json" else logging.Formatter(TEXT_FORMAT)


def _redacting(handler: logging.Handler) -> None:
    if not any(isinstance(f, RedactSecrets) for f in handler.filters):
        handler.addFilter(RedactSecrets())


def setup_logging(level: str, log_format: str = "text") -> None:
    """Logs on stderr in ``log_format`` (``text`` or ``json``), unless the process configured logging itself
    (the root logger has a handler already). uvicorn's own handlers, when it installed them, get the
    same format and redaction: its access log carries query strings."""
    fmt = formatter(log_format)
    root = logging.getLogger()
    if not root.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(fmt)
        _redacting(handler)
        root.addHandler(handler)
        root.setLevel(level)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        for theirs in logging.getLogger(name).handlers:
            _redacting(theirs)
            if log_format == "json":
                theirs.setFormatter(fmt)
