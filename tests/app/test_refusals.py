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


def test_the_operations_page_table_gives_each_message_and_its_headers() -> None:
    """docs/operations.md, "Every 'not now' is answered the same way": a row per refusal, with its message and
    its ``Retry-After`` (the verifier's own says when it tries again) and ``Connection: close`` where it closes."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "operations.md").read_text()
    rows = {cells[1].strip("`"): cells[2] for line in page.splitlines()
            if len(cells := [cell.strip() for cell in line.strip().strip("|").split("|")]) == 3
            and cells[1].startswith("`Service Unavailable: ")}
    assert set(rows) == {refusal.message for refusal in REFUSALS.values()}
    for refusal in REFUSALS.values():
        headers = rows[refusal.message]
        if refusal is not VERIFIER_UNAVAILABLE:
            assert f"`Retry-After: {refusal.retry_after}`" in headers, headers
        assert ("`Connection: close`" in headers) is refusal.closes, headers
