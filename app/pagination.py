"""Opaque cursors for the list methods."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from typing import TypeVar

from wiremcp.errors import InvalidParams

T = TypeVar("T")

_PREFIX = b"wiremcp:"


def _encode(offset: int) -> str:
    return base64.urlsafe_b64encode(_PREFIX + str(offset).encode()).decode().rstrip("=")


def _decode(cursor: object) -> int:
    if not isinstance(cursor, str) or len(cursor) > 64:
        raise InvalidParams("Invalid cursor")
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
    except (binascii.Error, ValueError):
        raise InvalidParams("Invalid cursor") from None
    if not raw.startswith(_PREFIX) or not raw[len(_PREFIX):].isdigit():
        raise InvalidParams("Invalid cursor")
    return int(raw[len(_PREFIX):])


def page(items: Sequence[T], cursor: object, size: int) -> tuple[Sequence[T], str | None]:
    """One page of ``items`` from ``cursor`` (None: the start), and the cursor of the next page."""
    start = 0 if cursor is None else _decode(cursor)
    if start > len(items):
        raise InvalidParams("Invalid cursor")
    end = start + size
    return items[start:end], (_encode(end) if end < len(items) else None)
