"""What ``deploy/local_cluster.py`` and ``deploy/nginx.py`` do with the processes they start: a free port, a
bounded wait for a child to be ready (or to exit first), and a stop that ends with a kill if need be.
Only the standard library is used."""

from __future__ import annotations

import logging
import socket
import subprocess
import time
from collections.abc import Callable

log = logging.getLogger("wiremcp.deploy")

START_BOUND = 30.0
"""Failure bound for a process to accept connections (a deadline, not a wait)."""
STOP_BOUND = 5.0
POLL = 0.02
"""The poll interval of a bounded wait."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def accepting(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.25):
            return True
    except OSError:
        return False


def wait_ready(process: subprocess.Popen[bytes], ready: Callable[[], bool], what: str) -> bool:
    """Poll until ``ready()``; False if the process exits first, ``TimeoutError`` after ``START_BOUND``."""
    deadline = time.monotonic() + START_BOUND
    while not ready():
        if process.poll() is not None:
            return False
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} did not accept connections in {START_BOUND:.0f}s")
        time.sleep(POLL)
    return True


def stop_process(process: subprocess.Popen[bytes], bound: float) -> None:
    """SIGTERM, ``bound`` seconds to exit, then SIGKILL."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(bound)
        except subprocess.TimeoutExpired:
            log.warning("pid %d did not stop in %.0fs; killing it", process.pid, bound)
            process.kill()
            process.wait(STOP_BOUND)
