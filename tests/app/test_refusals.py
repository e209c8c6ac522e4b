"""``wiremcp.refusals``: every "not now" answer is 503, a JSON-RPC -32603 error and ``Retry-After`` (the request
may be sent again); a replica shutting down also closes the connection."""

from __future__ import annotations

from pathlib import Path

import pytest

from wiremcp.errors import INTERNAL_ERROR
from wiremcp.refusals import REFUSALS, SHUTTING_DOWN, TOO_MANY_SESSIONS, VERIFIER_UNAVAILABLE, Refusal


@pytest.mark.parametrize("refusal", list(REFUSALS.values()), ids=list(REFUSALS))
def test_every_refusal_is_a_retryable_503(refusal: Refusal) -> None:
    assert (refusal.status, refusal.code) == (503, INTERNAL_ERROR)
    assert refusal.message.startswith("Service Unavailable: ")
    assert dict(refusal.headers())[b"retry-after"] == str(refusal.retry_after).encode()


def test_the_headers_of_each() -> None:
    assert SHUTTING_DOWN.headers() == [(b"retry-after", b"1"), (b"connection", b"close")]
    assert TOO_MANY_SESSIONS.headers() == [(b"retry-after", b"30")]
    assert VERIFIER_UNAVAILABLE.headers(7) == [(b"retry-after", b"7")]  # the verifier knows when


def test_the_readme_table_gives_each_message() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    assert all(f"| `{refusal.message}` |" in readme for refusal in REFUSALS.values())
