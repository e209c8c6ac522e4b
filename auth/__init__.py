"""OAuth 2.1 resource-server authorization for the HTTP transports (bearer tokens, protected resource metadata).

What users compose is exported here: ``BearerAuth`` (the ASGI middleware), the token verifiers
(``JWKSVerifier``, ``IntrospectionVerifier``, ``StaticTokenVerifier`` for development, ``TokenVerifier``
to write your own, which returns a ``wiremcp.Principal`` or raises ``InvalidToken``/``VerifierUnavailable``) and
``ProtectedResource``, the RFC 9728 metadata served at ``WELL_KNOWN``. Each is imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from wiremcp.exports import lazy_exports

if TYPE_CHECKING:
    from wiremcp.auth.introspection import IntrospectionVerifier
    from wiremcp.auth.jwt_verifier import JWKSVerifier
    from wiremcp.auth.metadata import WELL_KNOWN, ProtectedResource
    from wiremcp.auth.middleware import BearerAuth
    from wiremcp.auth.verifier import InvalidToken, StaticTokenVerifier, TokenVerifier, VerifierUnavailable

__all__ = ["WELL_KNOWN", "BearerAuth", "IntrospectionVerifier", "InvalidToken", "JWKSVerifier",
           "ProtectedResource", "StaticTokenVerifier", "TokenVerifier", "VerifierUnavailable"]

_HOMES = {"IntrospectionVerifier": "introspection", "JWKSVerifier": "jwt_verifier", "WELL_KNOWN": "metadata",
          "ProtectedResource": "metadata", "BearerAuth": "middleware",
          "InvalidToken": "verifier", "StaticTokenVerifier": "verifier", "TokenVerifier": "verifier",
          "VerifierUnavailable": "verifier"}

__getattr__ = lazy_exports(__name__, _HOMES)
