"""The OAuth server's secret, for what it keeps that nobody else may read or forge.

Two keys are derived from one secret (HKDF-SHA256, one per use): one encrypts what the OAuth server keeps in the
shared store that would be dangerous to read there (its signing keys, users' upstream tokens) with AES-GCM, the
other signs values a browser carries (the consent form's CSRF token). Every replica is given the same secret
(``WIREMCP_OAUTH_SECRET``); without one, a process makes its own, and what it sealed is lost with it.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

SECRET_BYTES = 32


class InvalidSeal(Exception):
    """What was to be opened was not sealed by this secret for this purpose (or was changed since)."""


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def from_b64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def digest(value: str) -> str:
    """A value's SHA-256, as the store's key for it: the store never holds a token, only its digest."""
    return b64url(hashlib.sha256(value.encode()).digest())


class Seal:
    """Encrypts and signs with keys derived from one secret."""

    __slots__ = ("_aead", "_mac_key")

    def __init__(self, secret: bytes) -> None:
        if len(secret) != SECRET_BYTES:
            raise ValueError(f"the OAuth secret is {SECRET_BYTES} bytes (base64url), got {len(secret)}")
        self._aead = AESGCM(_derive(secret, b"wiremcp oauth: records at rest"))
        self._mac_key = _derive(secret, b"wiremcp oauth: browser values")

    @classmethod
    def from_string(cls, text: str) -> Seal:
        """A secret written as base64url (``python -c "import secrets; print(secrets.token_urlsafe(32))"``)."""
        try:
            secret = from_b64url(text.strip())
        except (binascii.Error, ValueError):
            secret = b""
        if len(secret) != SECRET_BYTES:
            raise ValueError(f"the OAuth secret is {SECRET_BYTES} bytes written as base64url (43 characters: "
                             "python -c \"import secrets; print(secrets.token_urlsafe(32))\")")
        return cls(secret)

    @classmethod
    def generated(cls) -> Seal:
        """A secret of this process's own: what it seals cannot be opened by another process."""
        return cls(os.urandom(SECRET_BYTES))

    def seal(self, data: bytes, purpose: str) -> str:
        """``data`` encrypted and authenticated, bound to ``purpose`` (it opens for that purpose only)."""
        nonce = os.urandom(12)
        return b64url(nonce + self._aead.encrypt(nonce, data, purpose.encode()))

    def open(self, sealed: str, purpose: str) -> bytes:
        try:
            raw = from_b64url(sealed)
            return self._aead.decrypt(raw[:12], raw[12:], purpose.encode())
        except (InvalidTag, ValueError, binascii.Error):
            raise InvalidSeal(f"not sealed for {purpose}") from None

    def mac(self, *parts: str) -> str:
        """A MAC of ``parts`` (joined unambiguously)."""
        message = b"\0".join(part.encode() for part in parts)
        return b64url(hmac.new(self._mac_key, message, hashlib.sha256).digest())

    def verify_mac(self, mac: str, *parts: str) -> bool:
        return hmac.compare_digest(mac.encode(), self.mac(*parts).encode())


def _derive(secret: bytes, info: bytes) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=info).derive(secret)
