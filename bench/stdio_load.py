"""stdio load test: pipelined tools/call against wiremcp, the MCP SDKs and two bare line-echo ceilings.

    .venv/bin/python bench/stdio_load.py                    # 20,000 calls per server after a 2,000-call warm-up
    .venv/bin/python bench/stdio_load.py --window 0         # all 20,000 written at once, unthrottled

For every server: start it as a subprocess pinned to one core (``taskset -c 0``), do the handshake
(initialize, notifications/initialized) on its stdin/stdout, then - from this process, pinned to the
other core - write ``--calls`` tools/call requests as fast as the pipe takes them, with at most
``--window`` unanswered (default 1000; 0 writes them all at once), while reading every answer. Every
answer is parsed and checked (its id is one of ours, its result the expected ``structuredContent``).
Calls/s = calls / (last answer - first write); server CPU = the server process's user + system time
over the batch (``/proc/<pid>/stat``), per call. The TypeScript SDKs (``ts-v1``: ``@modelcontextprotocol/sdk``
1.32.2, ``StdioServerTransport``; ``ts-v2``: ``@modelcontextprotocol/server`` 2.4.0, ``serveStdio``) run on the
Node 22 that ``bench/peers.py`` installs under ``bench/.peers/``, with its ``node_modules``. See bench/README.md.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.machine import machine_line, warn_if_busy  # noqa: E402
from bench.peers import PeerError, describe_ts, ts_peer  # noqa: E402
from bench.servers import EXPECTED, PROTOCOL_VERSION, TEXT  # noqa: E402


@dataclass(frozen=True, slots=True)
class ServerSpec:
    name: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    note: str = ""
    peer: str = ""
    """``ts``: ``argv`` is a script of ``bench/ts/`` and its arguments, run with the node of ``bench/peers.py``;
    ``baseline``: ``argv`` is run with the Python of ``--baseline-python``, in the checkout of ``--baseline``."""


SERVERS: dict[str, ServerSpec] = {
    spec.name: spec for spec in (
        ServerSpec("ceiling", [sys.executable, "-m", "bench.servers", "ceiling-stdio"],
                   note="blocking line loop: orjson parse, fixed answer, flush"),
        ServerSpec("echo", [sys.executable, "-m", "bench.servers", "echo-stdio"],
                   note="blocking line loop, no JSON: id spliced into a fixed answer, flush"),
        ServerSpec("wiremcp", [sys.executable, "-m", "wiremcp", "stdio", "bench.servers:wiremcp_server"],
                   env={"WIREMCP_LOG_LEVEL": "WARNING"}, note="python -m wiremcp stdio"),
        ServerSpec("wiremcp-async", [sys.executable, "-m", "wiremcp", "stdio", "bench.servers:wiremcp_async_server"],
                   env={"WIREMCP_LOG_LEVEL": "WARNING"}, note="python -m wiremcp stdio, word_count an async def"),
        ServerSpec("wiremcp-baseline", ["-m", "wiremcp", "stdio", "bench.servers:wiremcp_server"],
                   env={"WIREMCP_LOG_LEVEL": "WARNING"}, peer="baseline",
                   note="python -m wiremcp stdio at the commit given with --baseline (the change's 'before')"),
        ServerSpec("official", [sys.executable, "-m", "bench.servers", "official-stdio"],
                   note="mcp 2.3.0 MCPServer.run('stdio')"),
        ServerSpec("ts-v1", ["v1_server.mjs", "stdio"], peer="ts",
                   note="@modelcontextprotocol/sdk 1.32.2 StdioServerTransport, node 22"),
        ServerSpec("ts-v2", ["v2_server.mjs", "stdio"], peer="ts",
                   note="@modelcontextprotocol/server 2.4.0 serveStdio, node 22"),
    )
}


@dataclass(slots=True)
class Result:
    server: str
    calls: int
    seconds: float
    ok: int
    errors: int
    first_error: str
    cpu_seconds: float = 0.0
    """The server process's CPU time (user + system) over the batch."""

    @property
    def rate(self) -> float:
        return self.calls / self.seconds if self.seconds else 0.0

    @property
    def cpu_us(self) -> float:
        """Server CPU microseconds per call."""
        return self.cpu_seconds / self.calls * 1e6 if self.calls else 0.0


class BenchError(Exception):
    pass


class Client:
    """The client side of one stdio server: writes lines, reads and checks answers."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        if proc.stdin is None or proc.stdout is None:
            raise BenchError("the server's stdin and stdout must be pipes")
        self.proc = proc
        self.stdin: IO[bytes] = proc.stdin
        self.out_fd = proc.stdout.fileno()
        self.buffer = b""

    def send(self, message: dict[str, Any]) -> None:
        self.stdin.write(orjson.dumps(message) + b"\n")
        self.stdin.flush()

    def lines(self, deadline: float) -> Iterator[bytes]:
        """Complete lines from the server's stdout until the deadline (then BenchError)."""
        while True:
            while (end := self.buffer.find(b"\n")) >= 0:
                line, self.buffer = self.buffer[:end], self.buffer[end + 1:]
                if line.strip():
                    yield line
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise BenchError("timed out waiting for answers")
            ready, _, _ = select.select([self.out_fd], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(self.out_fd, 1 << 20)
            if not chunk:
                raise BenchError(f"the server closed its stdout (exit code {self.proc.poll()})")
            self.buffer += chunk

    def handshake(self, timeout: float) -> None:
        self.send({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
            "protocolVersion": PROTOCOL_VERSION, "capabilities": {},
            "clientInfo": {"name": "wiremcp-bench", "version": "1.0.0"}}})
        for line in self.lines(time.monotonic() + timeout):
            message = orjson.loads(line)
            if isinstance(message, dict) and message.get("id") == "init":
                if "result" not in message:
                    raise BenchError(f"initialize failed: {message!r}")
                break
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def run(self, first_id: int, calls: int, window: int, timeout: float) -> tuple[float, int, int, str]:
        """Pipeline ``calls`` tools/call; returns (seconds, ok, errors, first error)."""
        template = (b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"word_count","arguments":'
                    + orjson.dumps({"text": TEXT}) + b"}}\n")
        requests = [template % i for i in range(first_id, first_id + calls)]
        permits = threading.Semaphore(window) if window > 0 else None
        failure: list[BaseException] = []

        def write() -> None:
            try:
                if permits is None:
                    self.stdin.write(b"".join(requests))
                    self.stdin.flush()
                    return
                i = 0
                while i < len(requests):
                    permits.acquire()
                    n = 1
                    while n < 512 and i + n < len(requests) and permits.acquire(blocking=False):
                        n += 1
                    self.stdin.write(b"".join(requests[i:i + n]))
                    self.stdin.flush()
                    i += n
            except (BrokenPipeError, ValueError, OSError) as exc:
                failure.append(exc)

        pending = set(range(first_id, first_id + calls))
        ok = errors = 0
        first_error = ""
        writer = threading.Thread(target=write, name="stdio-bench-writer", daemon=True)
        start = time.perf_counter()
        writer.start()
        for line in self.lines(time.monotonic() + timeout):
            message = orjson.loads(line)
            rid = message.get("id") if isinstance(message, dict) else None
            if not isinstance(rid, int) or rid not in pending:
                errors += 1  # an answer to nothing we sent (e.g. an error with id null)
                first_error = first_error or line.decode(errors="replace")[:300]
                if failure or errors > calls:
                    break
                continue
            pending.discard(rid)
            if permits is not None:
                permits.release()
            result = message.get("result")
            if isinstance(result, dict) and result.get("structuredContent") == EXPECTED and not result.get("isError"):
                ok += 1
            else:
                errors += 1
                first_error = first_error or line.decode(errors="replace")[:300]
            if not pending:
                break
        elapsed = time.perf_counter() - start
        writer.join(timeout)
        if failure:
            raise BenchError(f"writing requests failed: {failure[0]!r}")
        return elapsed, ok, errors, first_error


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` (all its threads) so far; 0.0 where /proc is missing."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def stop(proc: subprocess.Popen[bytes], grace: float = 5.0) -> None:
    """Close stdin (the stdio way to stop), then SIGTERM, then SIGKILL; always reaps the process."""
    if proc.stdin is not None:
        with contextlib.suppress(OSError, ValueError):
            proc.stdin.close()
    for action in (None, proc.terminate, proc.kill):
        if proc.poll() is not None:
            break
        if action is not None:
            with contextlib.suppress(ProcessLookupError):
                action()
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            continue
    if proc.stdout is not None:
        proc.stdout.close()


@contextlib.contextmanager
def pinned(cpus: set[int] | None) -> Iterator[None]:
    """Pin this process (the client) to ``cpus`` for the duration."""
    if cpus is None:
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


@contextlib.contextmanager
def stdio_server(spec: ServerSpec, args: argparse.Namespace, log: IO[bytes]) -> Iterator[Client]:
    """Start ``spec`` pinned to the server CPU, handshake, warm up; always stops the process."""
    argv, root = spec.argv, ROOT
    if spec.peer == "ts":
        ts = ts_peer(verbose=False)
        argv = [str(ts.node), str(ts.script(argv[0])), *argv[1:]]
    elif spec.peer == "baseline":
        if args.baseline is None or args.baseline_python is None:
            raise SystemExit("wiremcp-baseline needs --baseline DIR and --baseline-python PYTHON")
        argv, root = [str(args.baseline_python), *argv], args.baseline
    if args.server_cpu is not None:
        argv = ["taskset", "-c", args.server_cpu, *argv]
    env = {**os.environ, "PYTHONPATH": str(root), **spec.env}
    proc = subprocess.Popen(argv, cwd=root, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log)
    try:
        client = Client(proc)
        client.handshake(args.timeout)
        if args.warmup > 0:
            client.run(1, args.warmup, args.window, args.timeout)
        yield client
    finally:
        stop(proc)


def bench_all(args: argparse.Namespace, names: list[str], log: IO[bytes]) -> list[Result]:
    """Start every server, then run ``--repeat`` rounds, each measuring every server once (so that other
    load on the machine spreads over all of them); the median batch of each is reported."""
    with contextlib.ExitStack() as stack:
        clients = {name: stack.enter_context(stdio_server(SERVERS[name], args, log)) for name in names}
        runs: dict[str, list[Result]] = {name: [] for name in names}
        for round_no in range(args.repeat):
            for name, client in clients.items():
                first_id = 1 + args.warmup + round_no * args.calls
                cpu_before = cpu_seconds(client.proc.pid)
                seconds, ok, errors, first_error = client.run(first_id, args.calls, args.window, args.timeout)
                r = Result(name, args.calls, seconds, ok, errors, first_error,
                           cpu_seconds(client.proc.pid) - cpu_before)
                runs[name].append(r)
                print(f"  round {round_no + 1}: {name:<9} {r.rate:>9.0f} calls/s  ({r.calls} in {r.seconds:.2f} s, "
                      f"server CPU {r.cpu_us:.1f} µs/call, ok {r.ok}, errors {r.errors})"
                      + (f"  first error: {r.first_error}" if r.errors else ""), flush=True)
    results: list[Result] = []
    for group in runs.values():
        median = sorted(group, key=lambda r: r.seconds)[len(group) // 2]
        median.errors = sum(r.errors for r in group)
        median.first_error = next((r.first_error for r in group if r.first_error), "")
        results.append(median)
    return results


def _terminate(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--servers", default=",".join(n for n, s in SERVERS.items() if s.peer != "baseline"),
                        help="comma-separated, from %(default)s (default: all)")
    parser.add_argument("--calls", type=int, default=20_000, help="measured calls per server (default: 20000)")
    parser.add_argument("--warmup", type=int, default=2_000, help="warm-up calls first (default: 2000)")
    parser.add_argument("--window", type=int, default=1000,
                        help="at most this many unanswered requests (default: 1000, under wiremcp's cap of 1024 "
                             "requests in flight per connection; 0: write all at once)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="rounds over all servers; the median batch of each is reported (default: 1)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds allowed per batch (default: 300)")
    parser.add_argument("--server-cpu", default="0", help="CPU list for the server (taskset -c; default 0)")
    parser.add_argument("--client-cpu", default="1", help="CPU list for this client (default 1)")
    parser.add_argument("--no-pin", action="store_true", help="do not pin the processes")
    parser.add_argument("--log", type=Path, help="append the servers' stderr here (default: discarded)")
    parser.add_argument("--json", type=Path, help="also write the results to this JSON file")
    parser.add_argument("--baseline", type=Path,
                        help="for wiremcp-baseline: a checkout of the earlier commit (git worktree add DIR REV)")
    parser.add_argument("--baseline-python", type=Path,
                        help="for wiremcp-baseline: a Python whose wiremcp is that checkout installed")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.servers.split(",") if n.strip()]
    unknown = [n for n in names if n not in SERVERS]
    if unknown:
        parser.error(f"unknown server: {', '.join(unknown)}")
    if args.repeat < 1 or args.calls < 1 or args.window < 0:
        parser.error("--repeat and --calls must be at least 1, --window at least 0")
    if args.no_pin:
        args.server_cpu = args.client_cpu = None
    client_cpus = None if args.client_cpu is None else {int(c) for c in args.client_cpu.split(",")}

    signal.signal(signal.SIGTERM, _terminate)  # so that the finally blocks stop the servers
    window = f"at most {args.window} unanswered" if args.window else "all written at once"
    machine = machine_line()
    print(machine, flush=True)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, server on CPU {args.server_cpu}, "
          f"client on CPU {args.client_cpu}; {args.warmup} warm-up + {args.repeat} round(s) of {args.calls} "
          f"tools/call, {window}", flush=True)
    if any(SERVERS[name].peer == "ts" for name in names):
        try:
            print(f"ts-v1, ts-v2: {describe_ts(ts_peer())}", flush=True)  # made once, before anything is measured
        except PeerError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    warn_if_busy()
    with open(args.log or os.devnull, "ab") as log, pinned(client_cpus):
        try:
            results = bench_all(args, names, log)
        except BenchError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    print()
    print(f"{'server':<16} {'calls/s':>9} {'seconds':>8} {'CPU µs/call':>11} {'ok':>7} {'errors':>7}  note")
    for r in results:
        print(f"{r.server:<16} {r.rate:>9.0f} {r.seconds:>8.2f} {r.cpu_us:>11.1f} {r.ok:>7} {r.errors:>7}  "
              f"{SERVERS[r.server].note}")
    rates = {r.server: r.rate for r in results}
    for ours in ("wiremcp", "wiremcp-async"):
        if ours not in rates:
            continue
        for ref in ("official", "ts-v1", "ts-v2", "ceiling", "echo"):
            if rates.get(ref):
                goal = {"ceiling": " (target: at least 0.50)", "ts-v1": " (target: at least 1.00)"}.get(ref, "")
                print(f"{ours} / {ref}: {rates[ours] / rates[ref]:.2f}{goal}")
    if args.json is not None:
        loop = "uvloop" if importlib.util.find_spec("uvloop") else "asyncio"  # what `wiremcp stdio` runs on
        args.json.write_bytes(orjson.dumps({
            "machine": machine, "date": time.strftime("%Y-%m-%d"), "wiremcp_loop": loop, "calls": args.calls,
            "warmup": args.warmup, "window": args.window, "repeat": args.repeat,
            "results": [{**asdict(r), "rate": r.rate, "cpu_us": r.cpu_us} for r in results]}, option=orjson.OPT_INDENT_2))
    if any(r.errors for r in results):
        print("\nWARNING: some answers were errors (see above)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
