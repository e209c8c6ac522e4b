"""What a client gets for an unexpected failure (``wiremcp.failures``): a generic message and a reference."""

from __future__ import annotations

import re
from typing import Any

from wiremcp.errors import INTERNAL_ERROR

REFERENCE = r"\(reference ([0-9a-f]{8})\)"


def reference_in(message: str, what: str) -> str:
    """The reference of a masked failure's ``message``, which is exactly ``what`` and the reference."""
    match = re.fullmatch(re.escape(what) + " " + REFERENCE, message)
    assert match, f"{message!r} is not {what!r} and a reference"
    return match.group(1)


def masked_error(error: Any, what: str) -> str:
    """Check a JSON-RPC error is a masked failure (-32603, ``what`` and a reference, the reference in ``data``);
    return the reference."""
    assert error["code"] == INTERNAL_ERROR, error
    reference = reference_in(error["message"], what)
    assert error["data"] == {"reference": reference}, error
    return reference
