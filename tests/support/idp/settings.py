"""The upstream identity provider's Django settings: django-oauth-toolkit's authorization server, a login page,
SQLite in the run's folder. What differs per run (the port, the mode, the signing key) is read from the JSON file
that ``IDP_CONFIG`` names, written by :func:`tests.support.idp.running_idp`."""

from __future__ import annotations

import json
import os
from pathlib import Path

CONFIG = json.loads(Path(os.environ["IDP_CONFIG"]).read_text())
"""The run's configuration: ``port``, ``mode`` (``"oidc"`` or ``"oauth2"``), ``folder``, ``secret_key``,
``rsa_private_key`` (PEM), the client's and the user's names."""

OIDC = CONFIG["mode"] == "oidc"
ORIGIN = f"http://127.0.0.1:{CONFIG['port']}"

DEBUG = False
SECRET_KEY = CONFIG["secret_key"]
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
ROOT_URLCONF = "tests.support.idp.urls"
USE_TZ = True

INSTALLED_APPS = ["django.contrib.auth", "django.contrib.contenttypes", "oauth2_provider"]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
]
# the session in a signed cookie: no sessions table to migrate
SESSION_ENGINE = "django.contrib.sessions.backends.signed_cookies"
# a test's own users and clients: the fast hasher (the default one spends half a second on each secret checked)
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": str(Path(CONFIG["folder"]) / "idp.sqlite3")}}
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"

TEMPLATES = [{
    "BACKEND": "django.template.backends.django.DjangoTemplates",
    "DIRS": [str(Path(__file__).resolve().parent / "templates")],
    "APP_DIRS": True,  # django-oauth-toolkit's own pages (the consent page, should it be asked for)
    "OPTIONS": {"context_processors": ["django.template.context_processors.request"]},
}]

LOGIN_URL = "/accounts/login/"

OAUTH2_PROVIDER = {
    "OIDC_ENABLED": OIDC,
    "OIDC_RSA_PRIVATE_KEY": CONFIG["rsa_private_key"] if OIDC else "",
    "OIDC_ISS_ENDPOINT": f"{ORIGIN}/o",
    "OAUTH2_VALIDATOR_CLASS": "tests.support.idp.validator.IdPValidator",
    # PKCE allowed (S256 or plain), not required: the upstream's client may use it or not, as at most providers
    "PKCE_REQUIRED": False,
    "SCOPES": ({"openid": "OpenID Connect", "email": "Your email address", "profile": "Your name and groups"}
               if OIDC else {"read:user": "Your profile", "user:email": "Your email address"}),
}

LOGGING = {  # every request and every error on stderr (the run's log, shown when a test fails)
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"stderr": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["stderr"], "level": "INFO"},
}
