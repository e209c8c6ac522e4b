"""The identity provider's OAuth 2 validator: django-oauth-toolkit's, with the OpenID Connect claims a user's
sign-in carries (in the ID token, from the userinfo endpoint, and listed in the discovery document)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from oauth2_provider.oauth2_validators import OAuth2Validator


class IdPValidator(OAuth2Validator):  # type: ignore[misc]  # django-oauth-toolkit is untyped
    """Besides ``sub`` (the user's id): ``email`` and ``email_verified`` (scope ``email``),
    ``preferred_username`` and ``name`` (scope ``profile``), and ``groups``, the names of the user's Django
    groups (scope ``openid``: every sign-in has it)."""

    oidc_claim_scope: ClassVar[dict[str, str]] = {**OAuth2Validator.oidc_claim_scope, "groups": "openid"}

    def get_additional_claims(self) -> dict[str, Callable[[Any], Any]]:
        # without the request: DOT then lists the claims in the discovery document (claims_supported)
        return {
            "email": lambda request: request.user.email,
            "email_verified": lambda request: True,
            "preferred_username": lambda request: request.user.username,
            "name": lambda request: request.user.get_full_name() or request.user.username,
            "groups": lambda request: sorted(group.name for group in request.user.groups.all()),
        }
