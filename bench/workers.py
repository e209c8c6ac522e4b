"""Throughput per core as uvicorn workers are added: one worker against ``uvicorn --workers N``, side by side.

    .venv/bin/python bench/workers.py                        # 1 vs 2 workers, 3 interleaved rounds of 5 s
    .venv/bin/python bench/workers.py --json w.json          # also the JSON that bench/targets.py reads
    .venv/bin/python bench/workers.py --repeat 1 --duration 1 --warmup 1 --settle 0 --retries 0   # a functional run

Cases (``--cases``, each ``server@era``): wiremcp in the stateless era (in-memory: no session to share),
wiremcp-redis in the handshake era (one session, in Redis, used by every worker), for reference the bare-ASGI
ceiling in the stateless era, and two peers in the stateless era, sessionless like wiremcp there, so that
wiremcp's lead over them can be read at 1 and at N workers: the official Python SDK (``official-modern``, as
``uvicorn --workers N`` like wiremcp) and the TypeScript SDK v2 (``ts-v2``: with N > 1, under Node's
``cluster``, ``bench/ts/cluster.mjs``: a primary forking N workers that share its listening socket). wiremcp
in the handshake era with N > 1 workers is refused: an in-memory session lives in the worker that made it, and
the other workers answer 404.

Pinning (a 2-core machine cannot give N workers N cores *and* wrk a core of its own):

* 1 worker: the server (and wiremcp-redis's redis-server) on CPU 0 (``taskset -c 0``); wrk not pinned;
* N workers: the server (the supervisor and its workers, or the Node primary and its workers; redis-server too)
  on CPUs 0..N-1; wrk not pinned.

wrk is left unpinned in both so that the two configurations differ only by the workers (and the cores they
may use). With N workers wrk competes with them for the same cores, so the req/s of N workers cannot reach N
times one worker's here; what the comparison can show is the throughput per core the server actually used
(req/s / (CPU of the supervisor or primary, its workers and its redis-server per second)), reported next to the
raw req/s per worker. Before any load, every worker must answer a ``tools/call`` (on the one session in the handshake
era): the connections are opened one by one and matched to the worker that accepted each
(``/proc/net/tcp`` and the workers' ``/proc/<pid>/fd``). See bench/README.md ("Running", "Method").
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import importlib.metadata
import importlib.util
import itertools
import json
import os
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.http_load import (  # noqa: E402
    ACCEPT,
    ERAS,
    HANDSHAKE,
    LUA,
    PATH,
    SERVERS,
    WORKER_SERVERS,
    WORKLOADS,
    BenchError,
    RedisServer,
    Result,
    Target,
    check,
    combine,
    cpu_seconds,
    descendants,
    handshake,
    measure,
    message_for,
    redis_server,
    run_wrk,
    source_revision,
    uvicorn_server,
    with_workers,
)
from bench.machine import machine_line, warn_if_busy  # noqa: E402
from bench.peers import PeerError, describe_ts, ts_peer  # noqa: E402
from bench.servers import EXPECTED  # noqa: E402

DEFAULT_CASES = (
    "wiremcp@2026-07-28,wiremcp-redis@2025-11-25,ceiling@2026-07-28,official-modern@2026-07-28,ts-v2@2026-07-28"
)
PEERS = ("official-modern", "ts-v2")
"""The peers among the cases, each compared with wiremcp at the same worker count."""
CASE_SERVERS = tuple(name for name in WORKER_SERVERS if name != "wiremcp-baseline")
"""The servers a case may name (wiremcp-baseline needs http_load.py's --baseline, which this script lacks)."""
_IDS = itertools.count(1)
"""JSON-RPC ids of the requests sent to reach every worker: strings, never one of wrk's numbers."""


def stack(loop: str, http: str) -> tuple[str, str]:
    """What uvicorn's ``--loop`` and ``--http`` resolve to in the servers (they run on this venv's python)."""
    if loop == "auto":
        loop = "uvloop" if importlib.util.find_spec("uvloop") else "asyncio"
    if http == "auto":
        http = "httptools" if importlib.util.find_spec("httptools") else "h11"
    return loop, http


# -- which worker answered ------------------------------------------------------------------------
def server_inode(server_port: int, client_port: int) -> int | None:
    """The inode of the server's end of the loopback connection from ``client_port`` (``/proc/net/tcp``)."""
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError), open(name) as table:
            next(table, None)
            for line in table:
                fields = line.split()
                local, remote = fields[1].rsplit(":", 1)[1], fields[2].rsplit(":", 1)[1]
                if int(local, 16) == server_port and int(remote, 16) == client_port:
                    return int(fields[9])
    return None


def owner(inode: int, pids: list[int]) -> int | None:
    """Which of ``pids`` holds the socket ``inode``."""
    wanted = f"socket:[{inode}]"
    for pid in pids:
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{pid}/fd"):
                with contextlib.suppress(OSError):
                    if os.readlink(f"/proc/{pid}/fd/{fd}") == wanted:
                        return pid
    return None


def worker_pids(pid: int, workers: int) -> list[int]:
    """The processes serving requests: the server itself with one worker; with more, the children of uvicorn's
    supervisor started by ``multiprocessing.spawn`` (not multiprocessing's resource tracker, also a child), or
    the children of a Node cluster primary (``bench/ts/cluster.mjs``: ``cluster.fork`` runs that script again)."""
    if workers == 1:
        return [pid]
    found = []
    for child in descendants(pid):
        try:
            stat = Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        spawned = any(b"spawn_main" in arg for arg in cmdline)
        forked = len(cmdline) > 1 and cmdline[1].endswith(b"cluster.mjs")
        if int(stat[1]) == pid and (spawned or forked):
            found.append(child)
    return found


def ask(
    conn: http.client.HTTPConnection,
    message: dict[str, Any],
    era: str,
    session: str | None,
    extra: dict[str, str],
) -> tuple[int, Any]:
    """POST one message on a kept-open connection; the status and the JSON-RPC answer (JSON or SSE)."""
    headers = {"Accept": ACCEPT, "Content-Type": "application/json", "MCP-Protocol-Version": era, **extra}
    if session is not None:
        headers["Mcp-Session-Id"] = session
    conn.request("POST", PATH, body=json.dumps(message).encode(), headers=headers)
    resp = conn.getresponse()
    raw = resp.read()
    if resp.getheader("content-type", "").startswith("text/event-stream"):
        data = [line[5:] for line in raw.decode().splitlines() if line.startswith("data:") and '"id"' in line]
        raw = data[-1].encode() if data else b""
    return resp.status, json.loads(raw) if raw else None


def every_worker(
    port: int, pid: int, workers: int, era: str, session: str | None, timeout: float = 30.0
) -> dict[int, int]:
    """Open connections one by one, each sending one ``tools/call`` of ``era`` (on ``session`` in the handshake
    era) and checking its answer, until every worker has answered one; returns the answers per worker pid.
    BenchError if an answer is wrong (a worker that does not know the session answers 404) or if not every
    worker answered within ``timeout`` (the workers start after the supervisor listens)."""
    answered: dict[int, int] = {}
    deadline = time.monotonic() + timeout
    conns: list[http.client.HTTPConnection] = []
    try:
        while time.monotonic() < deadline:
            pids = worker_pids(pid, workers)
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            conns.append(conn)
            message, extra = message_for(era, "tools/call", 0)
            message["id"] = f"every-worker-{next(_IDS)}"
            status, answer = ask(conn, message, era, session, extra)
            assert conn.sock is not None
            inode = server_inode(port, conn.sock.getsockname()[1])
            worker = owner(inode, pids) if inode is not None else None
            result = answer.get("result") if isinstance(answer, dict) else None
            if status != 200 or not isinstance(result, dict) or result.get("structuredContent") != EXPECTED:
                raise BenchError(
                    f"worker {worker} (of {pids}) answered a {era} tools/call"
                    f"{' on session ' + session if session else ''} with HTTP {status}: "
                    f"{str(answer)[:300]}"
                )
            if worker is not None:
                answered[worker] = answered.get(worker, 0) + 1
            if len(pids) == workers and set(pids) <= set(answered):
                return answered
            if (
                len(conns) >= 64
            ):  # the same worker keeps winning the accepts: start over with fresh connections
                for old in conns:
                    old.close()
                conns.clear()
                time.sleep(0.05)
    finally:
        for conn in conns:
            conn.close()
    raise BenchError(f"not every one of the {workers} workers answered within {timeout:g} s: {answered}")


# -- the comparison -------------------------------------------------------------------------------
@dataclass(slots=True)
class Setup:
    """One server under test: a case (server, era) as ``workers`` workers."""

    server: str
    era: str
    workers: int
    target: Target
    reached: dict[int, int]
    runs: dict[str, list[Result]]
    split: dict[str, list[list[float]]]
    """Per workload and run: each worker's CPU over the run, in cores."""


def cpus_for(workers: int) -> str:
    return "0" if workers == 1 else f"0-{min(workers, os.cpu_count() or 1) - 1}"


def bench(cases: list[tuple[str, str]], args: argparse.Namespace, logdir: Path) -> list[Setup]:
    setups: list[Setup] = []
    with contextlib.ExitStack() as stack:
        counts = (1, args.workers)
        redis: dict[int, RedisServer] = {}
        for workers in counts:
            cpu = None if args.no_pin else cpus_for(workers)
            sub = logdir / f"{workers}w"
            sub.mkdir(exist_ok=True)
            if any(SERVERS[server].redis for server, _ in cases):
                redis[workers] = stack.enter_context(redis_server(cpu, sub))
                print(
                    f"{redis[workers].version} on CPU {cpu} for {workers} worker(s) (port {redis[workers].port})",
                    flush=True,
                )
            for server, era in cases:
                spec = SERVERS[server]
                backend = redis.get(workers) if spec.redis else None
                port, pid = stack.enter_context(
                    uvicorn_server(spec, 1, cpu, args.loop, args.http, sub, backend, workers)
                )
                target = Target(port, pid, redis=backend)
                if era == HANDSHAKE and not spec.sessionless:
                    target.session = handshake(port)
                reached = every_worker(port, pid, workers, era, target.session if era == HANDSHAKE else None)
                for workload in args.methods:
                    check(port, era, target.session if era == HANDSHAKE else None, workload)
                print(
                    f"{server} {era}, {workers} worker(s) on CPU {cpu} (port {port}): every worker answered a "
                    f"tools/call{' on the one session' if target.session else ''}: "
                    + ", ".join(f"pid {w} {n}x" for w, n in sorted(reached.items())),
                    flush=True,
                )
                setups.append(Setup(server, era, workers, target, reached, {}, {}))
        for round_no in range(args.repeat):
            for setup in setups:
                session = setup.target.session if setup.era == HANDSHAKE else None
                for workload in args.methods:
                    if round_no == 0 and args.warmup > 0:
                        run_wrk(setup.target.port, session, setup.era, workload, args.warmup, args)
                    for _attempt in range(1 + args.retries):
                        pids = worker_pids(setup.target.pid, setup.workers)
                        before = [cpu_seconds(p) for p in pids]
                        r, _ = measure(setup.target, session, setup.server, setup.era, workload, args)
                        split = [
                            (cpu_seconds(p) - b) / r.seconds if r.seconds else 0.0
                            for p, b in zip(pids, before, strict=True)
                        ]
                        setup.runs.setdefault(workload, []).append(r)
                        setup.split.setdefault(workload, []).append(split)
                        print(
                            f"  round {round_no + 1}: {setup.server:<15} {setup.era} {workload:<11} "
                            f"{setup.workers} worker(s) {r.rps:>8.0f} req/s  p99 {r.p99_ms:7.2f} ms  "
                            f"ok {r.ok}/{r.requests}  cpu server {r.server_cpu:.2f} "
                            f"(workers {' + '.join(f'{s:.2f}' for s in split)}) redis {r.backend_cpu:.2f} "
                            f"wrk {r.client_cpu:.2f} other {r.other_cpu:.2f}"
                            + (f"  FAILURES {r.failures}: {r.first_bad}" if r.failures else "")
                            + ("" if r.clean else "  NOISY"),
                            flush=True,
                        )
                        if r.clean:
                            break
    return setups


def available_cores(workers: int, r: Result) -> float:
    """The cores the server side could have used during run ``r``: one when pinned to one core; with N workers
    on N cores, those N less what wrk and other processes used of them (wrk is not pinned and shares them)."""
    if workers == 1:
        return 1.0
    return max(min(workers, os.cpu_count() or workers) - r.client_cpu - r.other_cpu, 0.05)


def rows(setups: list[Setup]) -> list[dict[str, Any]]:
    """One row per case, workload and worker count: the median run (http_load.combine) and its figures."""
    out: list[dict[str, Any]] = []
    for setup in setups:
        for workload, runs in setup.runs.items():
            splits = list(zip(runs, setup.split[workload], strict=True))
            r = combine(runs)
            used, available = r.server_cpu + r.backend_cpu, available_cores(setup.workers, r)
            out.append(
                {
                    **asdict(r),
                    "failures": r.failures,
                    "workers": setup.workers,
                    "worker_cpu": next(split for run, split in splits if run is r),
                    "server_side_cores": used,
                    "available_cores": available,
                    "rps_per_worker": r.rps / setup.workers,
                    "rps_per_core": r.rps / used if used else 0.0,
                    "rps_per_available_core": r.rps / available,
                    "reached": {str(k): v for k, v in setup.reached.items()},
                }
            )
    return out


def comparisons(results: list[dict[str, Any]], workers: int) -> list[dict[str, Any]]:
    """For each case and workload, N workers against one: req/s per worker (raw), per core the server side used
    (its processes' and its redis-server's CPU time), and per core it could have used (available_cores)."""
    by_key = {(r["server"], r["era"], r["workload"], r["workers"]): r for r in results}
    out: list[dict[str, Any]] = []
    for (server, era, workload, count), many in by_key.items():
        one = by_key.get((server, era, workload, 1))
        if count == 1 or one is None or not one["rps"] or not one["rps_per_core"]:
            continue
        out.append(
            {
                "server": server,
                "era": era,
                "workload": workload,
                "workers": workers,
                "per_worker": many["rps_per_worker"] / one["rps"],
                "per_core_used": many["rps_per_core"] / one["rps_per_core"],
                "per_core_available": many["rps_per_available_core"] / one["rps_per_available_core"],
            }
        )
    return out


def report(results: list[dict[str, Any]], workers: int) -> None:
    print()
    print(
        f"{'server':<15} {'era':<10} {'workload':<11} {'workers':>7} {'req/s':>8} {'/worker':>8} {'p50 ms':>7} "
        f"{'p99 ms':>7} {'srv cores':>9} {'each worker':>11} {'redis':>5} {'wrk':>5} {'other':>5} "
        f"{'/core used':>10} {'/core avail':>11} {'clean':>5}"
    )
    for r in sorted(results, key=lambda r: (r["server"], r["era"], r["workload"], r["workers"])):
        split = "+".join(f"{s:.2f}" for s in r["worker_cpu"])
        print(
            f"{r['server']:<15} {r['era']:<10} {r['workload']:<11} {r['workers']:>7} {r['rps']:>8.0f} "
            f"{r['rps_per_worker']:>8.0f} {r['p50_ms']:>7.2f} {r['p99_ms']:>7.2f} {r['server_cpu']:>9.2f} "
            f"{split:>11} {r['backend_cpu']:>5.2f} {r['client_cpu']:>5.2f} {r['other_cpu']:>5.2f} "
            f"{r['rps_per_core']:>10.0f} {r['rps_per_available_core']:>11.0f} {r['clean_runs']:>3}/{r['runs']}"
        )
    print()
    print(
        f"{f'{workers} workers / 1 worker (req/s)':<40} {'per worker':>10} {'per core used':>13} {'per core available':>18}"
    )
    for c in comparisons(results, workers):
        label = f"{c['server']} {c['era']} {c['workload']}"
        print(
            f"{label:<40} {c['per_worker']:>10.2f} {c['per_core_used']:>13.2f} {c['per_core_available']:>18.2f}"
        )
    by_key = {(r["server"], r["era"], r["workload"], r["workers"]): r for r in results}
    leads = [
        (peer, era, workload, count, ours["rps"] / theirs["rps"])
        for (peer, era, workload, count), theirs in sorted(by_key.items())
        if peer in PEERS and theirs["rps"] and (ours := by_key.get(("wiremcp", era, workload, count)))
    ]
    if leads:
        print()
        title = "wiremcp req/s / each peer's, same workers"
        print(f"{title:<44} {'workers':>7} {'ratio':>6}")
        for peer, era, workload, count, value in leads:
            print(f"{f'{peer} {era} {workload}':<44} {count:>7} {value:>6.2f}")


def _terminate(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--cases",
        default=DEFAULT_CASES,
        help=f"comma-separated server@era, servers from {', '.join(CASE_SERVERS)} (default: %(default)s)",
    )
    parser.add_argument(
        "--methods", default="tools/call", help="comma-separated workloads (default: tools/call)"
    )
    parser.add_argument("--workers", type=int, default=2, help="compared with one worker (default: 2)")
    parser.add_argument("--duration", type=int, default=5, help="measured seconds per run (default: 5)")
    parser.add_argument(
        "--warmup", type=int, default=2, help="warm-up seconds per setup and workload (default: 2)"
    )
    parser.add_argument(
        "--repeat", type=int, default=3, help="interleaved rounds; the median is reported (default: 3)"
    )
    parser.add_argument("--connections", type=int, default=32, help="wrk connections (default: 32)")
    parser.add_argument("--threads", type=int, default=1, help="wrk threads (default: 1)")
    parser.add_argument("--timeout", type=float, default=30.0, help="wrk per-request timeout in seconds")
    parser.add_argument(
        "--max-other",
        type=float,
        default=0.25,
        help="a run during which other processes used more CPU than this (in cores) is noisy (default: 0.25)",
    )
    parser.add_argument("--retries", type=int, default=2, help="extra attempts for a noisy run (default: 2)")
    parser.add_argument(
        "--settle",
        type=float,
        default=60.0,
        help="before each run, wait up to this many seconds for the CPUs to be quiet",
    )
    parser.add_argument("--client-cpu", default=None, help="CPU list for wrk (default: not pinned)")
    parser.add_argument("--no-pin", action="store_true", help="pin nothing (the servers neither)")
    parser.add_argument("--loop", default="auto", help="uvicorn --loop (default: auto)")
    parser.add_argument("--http", default="auto", help="uvicorn --http (default: auto)")
    parser.add_argument(
        "--json", type=Path, help="also write the results to this JSON file (for bench/targets.py)"
    )
    parser.add_argument("--keep-logs", action="store_true", help="keep the server logs")
    parser.add_argument("-v", "--verbose", action="store_true", help="print wrk's full reports")
    args = parser.parse_args(argv)
    args.methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    cases: list[tuple[str, str]] = []
    for item in (c.strip() for c in args.cases.split(",") if c.strip()):
        server, _, era = item.partition("@")
        if server not in CASE_SERVERS or era not in ERAS:
            parser.error(f"unknown case {item!r}: server@era, from {', '.join(CASE_SERVERS)}")
        if era not in SERVERS[server].eras:
            parser.error(f"{item}: {server} serves only {', '.join(SERVERS[server].eras)}")
        if not with_workers(SERVERS[server], era, args.workers):
            parser.error(f"{item}: in-memory sessions do not span workers (use wiremcp-redis in {HANDSHAKE})")
        cases.append((server, era))
    if unknown := [m for m in args.methods if m not in WORKLOADS or "@" in m]:
        parser.error(f"unknown workload (the 500-tool servers are not run here): {', '.join(unknown)}")
    if args.workers < 2 or args.repeat < 1 or args.duration < 1 or args.warmup < 0 or args.retries < 0:
        parser.error(
            "--workers at least 2, --repeat and --duration at least 1, --warmup and --retries at least 0"
        )
    if args.no_pin:
        args.client_cpu = None
    for tool in ("wrk", *(() if args.no_pin else ("taskset",))):
        if shutil.which(tool) is None:
            parser.error(f"{tool} is not installed")
    peers = ""
    try:  # made (npm ci, Node) once, before anything is measured
        if any(SERVERS[server].peer == "ts" for server, _ in cases):
            peers += f"; ts-v2 (Node cluster with N workers): {describe_ts(ts_peer())}"
    except PeerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if any(server == "official-modern" for server, _ in cases):
        peers += f"; official-modern: mcp {importlib.metadata.version('mcp')}"
    loop, http = stack(args.loop, args.http)
    pinning = {
        n: {"server": None if args.no_pin else cpus_for(n), "wrk": args.client_cpu} for n in (1, args.workers)
    }
    machine = machine_line()
    environment = (
        f"{source_revision()}, python {sys.version.split()[0]}, uvicorn --loop {args.loop} --http "
        f"{args.http} (= {loop} + {http}), {os.cpu_count()} CPUs; 1 worker: server and redis-server on "
        f"CPU {pinning[1]['server']}; {args.workers} workers: on CPUs {pinning[args.workers]['server']}; "
        f"wrk on CPU {args.client_cpu or 'any (not pinned)'}, -t{args.threads} -c{args.connections}, "
        f"{args.warmup:g} s warm-up + {args.repeat} round(s) of {args.duration:g} s{peers}"
    )
    print(machine, flush=True)
    print(environment, flush=True)
    signal.signal(signal.SIGTERM, _terminate)  # so that the finally blocks stop the servers
    warn_if_busy()
    logdir = Path(tempfile.mkdtemp(prefix="wiremcp-workers-"))
    args.lua = logdir / LUA.name
    shutil.copyfile(LUA, args.lua)
    try:
        results = rows(bench(cases, args, logdir))
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        if args.keep_logs:
            print(f"server logs: {logdir}")
        else:
            shutil.rmtree(logdir, ignore_errors=True)
    report(results, args.workers)
    if args.json is not None:
        args.json.write_text(
            json.dumps(
                {
                    "machine": machine,
                    "environment": environment,
                    "date": time.strftime("%Y-%m-%d"),
                    "loop": loop,
                    "http": http,
                    "workers": args.workers,
                    "pinning": {str(k): v for k, v in pinning.items()},
                    "results": results,
                    "comparisons": comparisons(results, args.workers),
                },
                indent=2,
            )
        )
    if failed := [r for r in results if r["failures"]]:
        names = ", ".join(
            f"{r['server']} {r['era']} {r['workload']} ({r['workers']} workers)" for r in failed
        )
        print(f"\nWARNING: failed answers in {names}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
