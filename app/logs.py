"""The framework's logs: on stderr, as text or JSON lines, with the session and request they belong to,
and never a credential.

``SESSION_ID`` is set by the HTTP transport from the ``Mcp-Session-Id`` header, ``REQUEST_ID`` by
``wiremcp.entry.serve`` around each request; the JSON formatter adds both to every record logged in their scope.
``RedactSecrets`` masks bearer tokens and ``Authorization`` values wherever a message carries one.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from datetime import UTC, datetime

import orjson

from wiremcp.types import RequestId

SESSION_ID: ContextVar[str | None] = ContextVar("wiremcp_session_id", default=None)
"""The handshake-era session of the HTTP request being served."""
REQUEST_ID: ContextVar[RequestId | None] = ContextVar("wiremcp_request_id", default=None)
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


ARGS_READERS = frozenset({"uvicorn.access"})
"""Loggers whose records' arguments their formatter reads itself (uvicorn's ``AccessFormatter`` unpacks
its five): such a record always keeps its arguments, never becoming one rewritten message."""


Args = tuple[object, ...] | Mapping[str, object] | None
"""What ``LogRecord.args`` holds."""


def _message(msg: object, args: Args) -> str | None:
    """What ``LogRecord.getMessage`` makes of ``msg`` and ``args``; None if they do not format."""
    try:
        text = str(msg)
        return text % args if args else text
    except Exception:
        return None


def _each(args: Args, mask: Callable[[object], object]) -> Args:
    """``args`` of the same shape (a tuple, or a mapping for ``%(name)s``) with ``mask`` applied to each."""
    if isinstance(args, tuple):
        return tuple(mask(arg) for arg in args)
    if isinstance(args, Mapping):
        return {key: mask(value) for key, value in args.items()}
    return args


def _redacted_text(value: object) -> object:
    return redact(value) if isinstance(value, str) else value


def _redacted_whole(value: object) -> object:
    """Any string, and any value whose text holds a secret, becomes ``[REDACTED]``; numbers stay."""
    if isinstance(value, str):
        return REDACTED
    text = str(value)
    return REDACTED if redact(text) != text else value


class RedactSecrets(logging.Filter):
    """Masks credentials in a record's message and traceback before any handler formats it.

    The record keeps its shape: the template (``msg``) and each argument are masked on their own, so
    a formatter that reads ``args`` (uvicorn's access log) still finds them, and uvicorn's coloured
    ``color_message`` still formats. Only when a secret spans the template and an argument
    (``"?%s" % "token=..."``), or hides in an argument that is not a string, is the whole message
    rewritten (``msg`` the masked message, no ``args``), except on records of ``ARGS_READERS``:
    there, every string argument (and any other whose text holds the secret) becomes ``[REDACTED]``,
    since its formatter would fail without them.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        message = _message(record.msg, record.args)
        if message is None or redact(message) != message:
            self._mask(record, message)
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True

    @staticmethod
    def _mask(record: logging.LogRecord, message: str | None) -> None:
        args = _each(record.args, _redacted_text)
        msg = record.msg
        if isinstance(msg, str):
            masked = redact(msg)
            if masked != msg and (message is None or _message(masked, args) is not None):
                msg = masked  # a secret in the template itself, placeholders intact
        if message is not None:
            result = _message(msg, args)
            if result is None or redact(result) != result:  # the secret spans template and arguments
                if record.name in ARGS_READERS:
                    args = _each(record.args, _redacted_whole)
                else:
                    msg, args = redact(message), ()
                    record.__dict__.pop("color_message", None)
        record.msg, record.args = msg, args


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
        raise ValueError(f"WIREMCP_LOG_FORMAT must be one of {', '.join(LOG_FORMATS)}, got {log_format!r}")
    return JSONFormatter() if log_format == "json" else logging.Formatter(TEXT_FORMAT)


def _redacting(handler: logging.Handler) -> None:
    if not any(isinstance(f, RedactSecrets) for f in handler.filters):
        handler.addFilter(RedactSecrets())


def setup_logging(level: str, log_format: str = "text") -> None:
    """Logs on stderr in ``log_format`` (``text`` or ``json``), unless the process configured logging itself
    (the root logger has a handler already). uvicorn's own handlers, when it installed them, get the
    same format and redaction (its access log carries query strings) and write to stderr too."""
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
            if isinstance(theirs, logging.StreamHandler) and theirs.stream in (sys.stdout, sys.__stdout__):
                theirs.setStream(sys.stderr)  # uvicorn writes its access log to stdout by default
            if log_format == "json":
                theirs.setFormatter(fmt)
