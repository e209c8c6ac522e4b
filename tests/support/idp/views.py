"""The identity provider's own endpoint beside django-oauth-toolkit's: the user API of a plain OAuth 2 provider,
shaped like GitHub's ``GET /user``."""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from oauth2_provider.oauth2_backends import get_oauthlib_core


def user_api(request: HttpRequest) -> JsonResponse:
    """``{"id", "login", "email"}`` of the user a bearer access token was issued to (checked by
    django-oauth-toolkit); without a valid one, GitHub's answer: 401 ``{"message": "Bad credentials"}``."""
    valid, checked = get_oauthlib_core().verify_request(request, scopes=[])
    if not valid:
        return JsonResponse({"message": "Bad credentials"}, status=401, headers={"WWW-Authenticate": "Bearer"})
    user = checked.user
    return JsonResponse({"id": user.pk, "login": user.username, "email": user.email})
