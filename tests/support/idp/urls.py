"""The identity provider's addresses: the login page at ``/accounts/login/``, django-oauth-toolkit under ``/o/``
(its OpenID Connect endpoints too in OIDC mode: the issuer is ``/o``, its discovery document
``/o/.well-known/openid-configuration``), and the user API at ``/api/user``."""

from __future__ import annotations

from django.contrib.auth.views import LoginView
from django.urls import include, path
from oauth2_provider import urls as dot

from tests.support.idp.settings import OIDC
from tests.support.idp.views import user_api

urlpatterns = [
    path("accounts/login/", LoginView.as_view(), name="login"),
    path("o/", include(((dot.base_urlpatterns + (dot.oidc_urlpatterns if OIDC else [])), dot.app_name),
                       namespace="oauth2_provider")),
    path("api/user", user_api, name="user-api"),
]
