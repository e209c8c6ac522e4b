"""The identity provider's process: ``python -m tests.support.idp.serve CONFIG`` binds a free loopback port,
migrates its SQLite database, creates the test's user (in group ``engineers``), its confidential client and a
service client (the client credentials grant: a machine's own tokens), writes
the port to ``<folder>/port`` and serves Django's ASGI app with uvicorn until it is ended. No ``manage.py``: the
settings come from ``CONFIG`` (a JSON file, see ``tests.support.idp.settings``)."""

from __future__ import annotations

import json
import logging
import os
import socket
import sys
import time
from pathlib import Path
from typing import Any

import uvicorn

log = logging.getLogger("idp")


def prepare(config: dict[str, Any]) -> None:
    """The schema (``migrate``), then the user, their group and the client the test named in ``config`` (made,
    or set as ``config`` says if a run before made them in the same database)."""
    from django.contrib.auth.models import Group, User
    from django.core.management import call_command
    from oauth2_provider.models import Application

    started = time.monotonic()
    call_command("migrate", verbosity=0, interactive=False)
    migrated = time.monotonic()
    user, _ = User.objects.update_or_create(username=config["username"], defaults={"email": config["email"]})
    user.set_password(config["password"])
    user.save()
    group, _ = Group.objects.get_or_create(name=config["group"])
    user.groups.add(group)
    Application.objects.update_or_create(client_id=config["client_id"], defaults={
        "name": "wiremcp's OAuth server", "client_secret": config["client_secret"],
        "client_type": Application.CLIENT_CONFIDENTIAL,
        "authorization_grant_type": Application.GRANT_AUTHORIZATION_CODE,
        "redirect_uris": config["redirect_uri"],
        "skip_authorization": True,  # no upstream consent: the OAuth server asks its own
        "algorithm": Application.RS256_ALGORITHM if config["mode"] == "oidc" else Application.NO_ALGORITHM,
    })
    Application.objects.update_or_create(client_id=config["service_client_id"], defaults={
        "name": "a gateway's own service account", "client_secret": config["service_client_secret"],
        "client_type": Application.CLIENT_CONFIDENTIAL,
        "authorization_grant_type": Application.GRANT_CLIENT_CREDENTIALS,
        "algorithm": Application.NO_ALGORITHM,
    })
    log.info("migrated in %.2fs, user and client created in %.2fs", migrated - started, time.monotonic() - migrated)


def main(path: str) -> None:
    """Serve the identity provider configured by the JSON file at ``path``."""
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    config = json.loads(Path(path).read_text())
    listening = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listening.bind(("127.0.0.1", 0))
    listening.listen(128)  # connections wait in the backlog until uvicorn accepts them
    config["port"] = listening.getsockname()[1]
    Path(path).write_text(json.dumps(config))  # the settings read the port (the issuer is an absolute URL)
    os.environ["IDP_CONFIG"] = path
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.support.idp.settings"
    import django
    from django.core.asgi import get_asgi_application

    django.setup()
    prepare(config)
    app = get_asgi_application()
    server = uvicorn.Server(uvicorn.Config(app, lifespan="off", log_level="info"))
    port_file = Path(config["folder"]) / "port"
    written = port_file.with_suffix(".tmp")
    written.write_text(str(config["port"]))
    written.rename(port_file)  # whole or absent, for the parent polling it
    server.run(sockets=[listening])


if __name__ == "__main__":
    main(sys.argv[1])
