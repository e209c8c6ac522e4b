"""The OAuth server's secret: what it seals opens for its purpose only, and nowhere else; its MACs verify."""

from __future__ import annotations

import pytest

from wiremcp.auth.oauth.sealing import InvalidSeal, Seal, b64url, digest


def test_what_is_sealed_opens_with_the_same_secret_and_purpose_only() -> None:
    secret = b64url(b"k" * 32)
    sealed = Seal.from_string(secret).seal(b"upstream token", "upstream tokens")
    assert b"upstream token" not in sealed.encode()
    assert Seal.from_string(secret).open(sealed, "upstream tokens") == b"upstream token"  # another replica
    with pytest.raises(InvalidSeal):
        Seal.from_string(secret).open(sealed, "signing key")
    with pytest.raises(InvalidSeal):
        Seal.generated().open(sealed, "upstream tokens")
    with pytest.raises(InvalidSeal):
        Seal.from_string(secret).open(sealed[:-2] + ("A" if sealed[-2] != "A" else "B") + sealed[-1], "upstream tokens")


def test_a_mac_verifies_for_the_same_parts_only() -> None:
    seal = Seal.generated()
    mac = seal.mac("consent", "approval-1", "cookie")
    assert seal.verify_mac(mac, "consent", "approval-1", "cookie")
    assert not seal.verify_mac(mac, "consent", "approval-2", "cookie")
    assert not seal.verify_mac(mac, "consent", "approval-1cookie", "")  # parts are not just concatenated
    assert not seal.verify_mac("", "consent", "approval-1", "cookie")


@pytest.mark.parametrize("text", ["short", "not base64 at all!", b64url(b"x" * 31), b64url(b"x" * 33)])
def test_a_secret_that_is_not_32_bytes_of_base64url_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="OAuth secret"):
        Seal.from_string(text)


def test_digests_are_stable_and_do_not_hold_the_value() -> None:
    assert digest("code-1") == digest("code-1") != digest("code-2")
    assert "code" not in digest("code-1")
