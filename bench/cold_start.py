"""Cold start: from spawning a server process to the first ``initialize`` result, over stdio and over HTTP.

    .venv/bin/python bench/cold_start.py                    # 10 measured runs per server and transport
    .venv/bin/python bench/cold_start.py --runs 20 --importtime 15

Servers (each process imports only its own framework):

* ``wiremcp``: stdio ``python -m wiremcp stdio examples.word_count:server``; HTTP
  ``WIREMCP_SERVER=examples.word_count:server python -m uvicorn app:asgi`` (default settings);
* ``official`` (``mcp==2.3.0``): stdio ``python -m bench.official_server stdio`` (``MCPServer.run("stdio")``);
  HTTP ``python -m uvicorn --factory bench.official_server:json_app`` (stateful, JSON answers);
* ``fastmcp`` (``fastmcp==4.1.6``, its own venv: ``bench/peers.py``): stdio ``python -m bench.fastmcp_server
  stdio``; HTTP ``python -m uvicorn --factory bench.fastmcp_server:json_app``;
* ``ts-v1`` (``@modelcontextprotocol/sdk`` 1.32.2) and ``ts-v2`` (``@modelcontextprotocol/server`` 2.4.0), on
  Node 22 (``bench/peers.py`` installs both under ``bench/.peers/``): stdio ``node v1_server.mjs stdio``
  (``StdioServerTransport``) and ``node v2_server.mjs stdio`` (``serveStdio``); HTTP ``node v1_server.mjs http
  PORT`` (stateful, JSON answers) and ``node v2_server.mjs http PORT``. ts-v2's endpoint is sessionless: it
  answers this ``initialize`` (a 2025-era request) through its default stateless fallback, over SSE and
  without an ``Mcp-Session-Id``, which is what is checked for it;
* ``floor``: no framework. stdio: a ``python -c`` that reads one line and writes a fixed answer; HTTP:
  ``uvicorn bench.cold_start:floor_app``, a bare ASGI app answering a fixed ``initialize`` result.

Every uvicorn runs with ``--host 127.0.0.1 --port <free> --log-level warning --no-access-log --lifespan on``.

stdio: the clock starts just before ``Popen``; the ``initialize`` line is written at once (the pipe holds it
until the server reads) and the clock stops when its answer has been read and checked. HTTP: the clock starts
just before ``Popen``; the port is polled every 2 ms until it accepts a connection (uvicorn listens only once
the app's lifespan has started), then ``initialize`` is POSTed; the clock stops when its answer has been
read and checked (a 200 with a result for ``2025-11-25`` and an ``Mcp-Session-Id``). The time to the port
accepting is reported as well. Each server process is pinned to one CPU (``taskset -c 0``) and stopped
afterwards (stdio: stdin closed; HTTP: SIGTERM). One unmeasured warm-up round first (page cache, ``.pyc``
files), then ``--runs`` rounds, each running every server and transport once in turn; medians reported.

Then, for wiremcp (and the SDK, for the totals), one run under ``python -X importtime`` of each transport
shows where the import time goes: total, self time summed by top-level package, and the slowest modules.
Nothing here imports wiremcp or the SDK in this process.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import re
import resource
import select
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.machine import busy_cpu_seconds, wait_quiet, warn_if_busy  # noqa: E402

if TYPE_CHECKING:
    from bench.peers import TsPeer

PROTOCOL_VERSION = "2025-11-25"
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": {"name": "wiremcp-bench", "version": "1.0.0"}}}
TRANSPORTS = ("stdio", "http")
SERVERS = ("floor", "wiremcp", "official", "fastmcp", "ts-v1", "ts-v2")
RATIOS = ("official", "fastmcp", "ts-v1")
"""The servers every median is divided by, each in a column of its own."""


class BenchError(Exception):
    pass


# -- the floor: python (+ uvicorn) with no framework ------------------------------------------------
_FLOOR_RESULT = {"protocolVersion": PROTOCOL_VERSION, "capabilities": {"tools": {}},
                 "serverInfo": {"name": "floor", "version": "1.0.0"}}
FLOOR_STDIO = (
    "import json, sys\n"
    "for line in sys.stdin:\n"
    "    msg = json.loads(line)\n"
    "    if 'id' in msg:\n"
    f"        sys.stdout.write(json.dumps({{'jsonrpc': '2.0', 'id': msg['id'], 'result': {_FLOOR_RESULT!r}}}) + '\\n')\n"
    "        sys.stdout.flush()\n"
)

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


async def floor_app(scope: Scope, receive: Receive, send: Send) -> None:
    """Bare ASGI: answers any POST with a fixed ``initialize`` result (``uvicorn bench.cold_start:floor_app``)."""
    if scope["type"] == "lifespan":
        while True:
            event = await receive()
            if event["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif event["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["type"] != "http":
        return
    body = b""
    while True:
        event = await receive()
        body += event.get("body", b"")
        if not event.get("more_body", False):
            break
    answer = json.dumps({"jsonrpc": "2.0", "id": json.loads(body)["id"], "result": _FLOOR_RESULT}).encode()
    await send({"type": "http.response.start", "status": 200, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(answer)).encode()),
        (b"mcp-session-id", b"floor")]})
    await send({"type": "http.response.body", "body": answer})


# -- how each server is started ---------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Command:
    server: str
    transport: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    session: bool = True
    """HTTP: the initialize answer carries an ``Mcp-Session-Id`` (not from ts-v2's sessionless endpoint)."""


def commands(servers: list[str], fastmcp: str | None, ts: TsPeer | None = None) -> list[Command]:
    py = sys.executable
    uvicorn = ["-m", "uvicorn", "--host", "127.0.0.1", "--port", "{port}", "--log-level", "warning",
               "--no-access-log", "--lifespan", "on"]
    quiet = {"WIREMCP_LOG_LEVEL": "WARNING"}
    table = {
        ("floor", "stdio"): Command("floor", "stdio", [py, "-c", FLOOR_STDIO]),
        ("floor", "http"): Command("floor", "http", [py, *uvicorn, "bench.cold_start:floor_app"]),
        ("wiremcp", "stdio"): Command("wiremcp", "stdio", [py, "-m", "wiremcp", "stdio", "examples.word_count:server"],
                                      quiet),
        ("wiremcp", "http"): Command("wiremcp", "http", [py, *uvicorn, "app:asgi"],
                                     {**quiet, "WIREMCP_SERVER": "examples.word_count:server"}),
        ("official", "stdio"): Command("official", "stdio", [py, "-m", "bench.official_server", "stdio"]),
        ("official", "http"): Command("official", "http", [py, *uvicorn, "--factory", "bench.official_server:json_app"]),
    }
    if fastmcp is not None:
        table[("fastmcp", "stdio")] = Command("fastmcp", "stdio", [fastmcp, "-m", "bench.fastmcp_server", "stdio"])
        table[("fastmcp", "http")] = Command("fastmcp", "http",
                                             [fastmcp, *uvicorn, "--factory", "bench.fastmcp_server:json_app"])
    if ts is not None:
        node = str(ts.node)
        for server, script in (("ts-v1", "v1_server.mjs"), ("ts-v2", "v2_server.mjs")):
            table[(server, "stdio")] = Command(server, "stdio", [node, str(ts.script(script)), "stdio"])
            table[(server, "http")] = Command(server, "http", [node, str(ts.script(script)), "http", "{port}"],
                                              session=server != "ts-v2")
    return [table[(s, t)] for t in TRANSPORTS for s in servers if (s, t) in table]


def child_env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WIREMCP_", "PYTHON"))}
    env.update({"PYTHONPATH": str(ROOT), "FASTMCP_CHECK_FOR_UPDATES": "off", "FASTMCP_SHOW_SERVER_BANNER": "false",
                **extra})
    return env


def pin(cpu: str | None, argv: list[str]) -> list[str]:
    return ["taskset", "-c", cpu, *argv] if cpu is not None else argv


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def check_initialize(answer: Any, where: str) -> None:
    result = answer.get("result") if isinstance(answer, dict) else None
    if answer.get("id") != 1 or not isinstance(result, dict) or result.get("protocolVersion") != PROTOCOL_VERSION \
            or "serverInfo" not in result:
        raise BenchError(f"{where}: not an initialize result: {str(answer)[:400]}")


@dataclass(slots=True)
class Timing:
    total: float
    """Seconds from spawning to the initialize result."""
    listening: float = 0.0
    """HTTP: seconds from spawning to the port accepting a connection."""
    stderr: str = ""
    other: float = 0.0
    """CPU used by other processes meanwhile, in cores (busy CPU time minus the server's and this process's)."""
    clean: bool = True
    """``other`` stayed within --max-other."""
    attempts: int = 1


def time_stdio(cmd: Command, cpu: str | None, timeout: float, importtime: bool, err: IO[bytes]) -> Timing:
    argv = cmd.argv[:1] + (["-X", "importtime"] if importtime else []) + cmd.argv[1:]
    line = json.dumps(INITIALIZE).encode() + b"\n"
    t0 = time.perf_counter()
    proc = subprocess.Popen(pin(cpu, argv), cwd=ROOT, env=child_env(cmd.env), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=err)
    assert proc.stdin is not None
    assert proc.stdout is not None
    try:
        proc.stdin.write(line)
        proc.stdin.flush()
        buffer = b""
        deadline = t0 + timeout
        fd = proc.stdout.fileno()
        while b"\n" not in buffer:
            ready, _, _ = select.select([fd], [], [], max(deadline - time.perf_counter(), 0))
            if not ready:
                raise BenchError(f"{cmd.server} stdio: no answer within {timeout:g} s")
            chunk = os.read(fd, 65536)
            if not chunk:
                raise BenchError(f"{cmd.server} stdio: the server closed stdout: {_read(err)[-2000:]}")
            buffer += chunk
        elapsed = time.perf_counter() - t0
        check_initialize(json.loads(buffer.split(b"\n", 1)[0]), f"{cmd.server} stdio")
        proc.stdin.close()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            stop(proc)
    finally:
        stop(proc)
        for pipe in (proc.stdin, proc.stdout):
            with contextlib.suppress(OSError):
                pipe.close()
    return Timing(elapsed, stderr=_read(err))


def _read(file: IO[bytes]) -> str:
    """Everything written to the server's stderr so far."""
    file.seek(0)
    return file.read().decode(errors="replace")


def time_http(cmd: Command, cpu: str | None, timeout: float, importtime: bool, err: IO[bytes]) -> Timing:
    port = free_port()
    argv = [a.replace("{port}", str(port)) for a in cmd.argv]
    argv = argv[:1] + (["-X", "importtime"] if importtime else []) + argv[1:]
    body = json.dumps(INITIALIZE).encode()
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
               "MCP-Protocol-Version": PROTOCOL_VERSION}
    t0 = time.perf_counter()
    proc = subprocess.Popen(pin(cpu, argv), cwd=ROOT, env=child_env(cmd.env), stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=err)
    try:
        deadline = t0 + timeout
        while True:
            if proc.poll() is not None:
                raise BenchError(f"{cmd.server} http: exited with {proc.returncode}: {_read(err)[-2000:]}")
            try:
                sock = socket.create_connection(("127.0.0.1", port), timeout=1)
                break
            except OSError:
                if time.perf_counter() > deadline:
                    raise BenchError(f"{cmd.server} http: not listening within {timeout:g} s") from None
                time.sleep(0.002)
        listening = time.perf_counter() - t0
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        conn.sock = sock
        conn.request("POST", "/mcp", body=body, headers=headers)
        resp = conn.getresponse()
        raw = resp.read()
        elapsed = time.perf_counter() - t0
        conn.close()
        if resp.status != 200 or bool(resp.getheader("mcp-session-id")) != cmd.session:
            raise BenchError(f"{cmd.server} http: HTTP {resp.status}, session {resp.getheader('mcp-session-id')!r}: "
                             f"{raw[:400]!r}")
        text = raw.decode()
        if resp.getheader("content-type", "").startswith("text/event-stream"):
            text = next(ln[5:] for ln in text.splitlines() if ln.startswith("data:") and '"result"' in ln)
        check_initialize(json.loads(text), f"{cmd.server} http")
    finally:
        stop(proc)
    return Timing(elapsed, listening, _read(err))


def measure(cmd: Command, cpu: str | None, timeout: float, importtime: bool = False) -> Timing:
    with tempfile.TemporaryFile() as err:  # not a pipe: -X importtime writes more than a pipe holds unread
        return (time_stdio if cmd.transport == "stdio" else time_http)(cmd, cpu, timeout, importtime, err)


def children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure_clean(cmd: Command, cpu: str | None, args: argparse.Namespace) -> Timing:
    """One timing, taken once the machine is quiet; measured again (up to --retries times) when other processes
    used more than --max-other cores meanwhile (the last attempt is kept, marked noisy, if none was clean)."""
    for attempt in range(1 + args.retries):
        wait_quiet(timeout=args.settle)
        busy0, kids0, own0, wall0 = busy_cpu_seconds(), children_cpu_seconds(), time.process_time(), time.perf_counter()
        timing = measure(cmd, cpu, args.timeout)
        wall = time.perf_counter() - wall0
        ours = children_cpu_seconds() - kids0 + time.process_time() - own0  # the server (reaped) and this client
        timing.other = max(busy_cpu_seconds() - busy0 - ours, 0.0) / wall
        timing.clean, timing.attempts = timing.other <= args.max_other, attempt + 1
        if timing.clean:
            break
    return timing


# -- -X importtime --------------------------------------------------------------------------------
_IMPORT_LINE = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)\s*$")


def import_profile(stderrs: list[str], top: int) -> list[str]:
    """Median over runs of: the total import time, self time by top-level package, the slowest modules."""
    totals: list[float] = []
    by_package: dict[str, list[float]] = defaultdict(list)
    by_module: dict[str, list[float]] = defaultdict(list)
    for stderr in stderrs:
        packages: dict[str, float] = defaultdict(float)
        total = 0.0
        for line in stderr.splitlines():
            match = _IMPORT_LINE.match(line)
            if match is None:
                continue
            self_us, _, _, name = int(match.group(1)), int(match.group(2)), match.group(3), match.group(4)
            total += self_us
            packages[name.split(".")[0]] += self_us
            by_module[name].append(self_us)
        totals.append(total)
        for name, us in packages.items():
            by_package[name].append(us)
    runs = len(stderrs)

    def med(values: list[float]) -> float:
        return statistics.median(values + [0.0] * (runs - len(values)))

    lines = [f"imports: {med(totals) / 1000:.0f} ms in all (sum of self times, median of {runs} runs)"]
    heaviest = sorted(by_package, key=lambda n: -med(by_package[n]))[:top]
    lines.append("  by top-level package (self ms): " + ", ".join(f"{n} {med(by_package[n]) / 1000:.1f}"
                                                                 for n in heaviest))
    modules = sorted(by_module, key=lambda n: -med(by_module[n]))[:top]
    lines.append("  slowest modules (self ms): " + ", ".join(f"{n} {med(by_module[n]) / 1000:.1f}" for n in modules))
    return lines


# -- main -----------------------------------------------------------------------------------------
def kept(timings: list[Timing]) -> list[Timing]:
    """The clean timings; the noisy ones only when there is no clean one."""
    return [t for t in timings if t.clean] or timings


def _terminate(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--servers", default=",".join(SERVERS), help="comma-separated (default: %(default)s)")
    parser.add_argument("--transports", default=",".join(TRANSPORTS), help="comma-separated (default: %(default)s)")
    parser.add_argument("--runs", type=int, default=10, help="measured rounds (default: 10)")
    parser.add_argument("--warmup", type=int, default=1, help="unmeasured rounds first (default: 1)")
    parser.add_argument("--importtime", type=int, default=5,
                        help="runs under -X importtime per wiremcp/official transport, 0 for none (default: 5)")
    parser.add_argument("--top", type=int, default=8, help="packages and modules listed per import profile")
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--max-other", type=float, default=0.25,
                        help="a run during which other processes used more CPU than this (in cores) is noisy and "
                             "measured again (default: 0.25)")
    parser.add_argument("--retries", type=int, default=3, help="extra attempts for a noisy run (default: 3)")
    parser.add_argument("--settle", type=float, default=30.0,
                        help="before each run, wait up to this many seconds for the CPUs to be quiet (default: 30)")
    parser.add_argument("--server-cpu", default="0", help="taskset -c for the servers (default: 0)")
    parser.add_argument("--no-pin", action="store_true")
    parser.add_argument("--json", type=Path, help="also write the timings to this JSON file")
    args = parser.parse_args(argv)
    servers = [s.strip() for s in args.servers.split(",") if s.strip()]
    transports = [t.strip() for t in args.transports.split(",") if t.strip()]
    if unknown := [s for s in servers if s not in SERVERS] + [t for t in transports if t not in TRANSPORTS]:
        parser.error(f"unknown: {', '.join(unknown)}")
    cpu = None if args.no_pin or shutil.which("taskset") is None else args.server_cpu
    signal.signal(signal.SIGTERM, _terminate)  # so that the finally blocks stop the servers

    fastmcp: str | None = None
    if "fastmcp" in servers:
        from bench.peers import PeerError, describe, fastmcp_python

        try:
            fastmcp = str(fastmcp_python())
        except PeerError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        print(f"fastmcp: {describe(Path(fastmcp))}")
    ts: TsPeer | None = None
    if "ts-v1" in servers or "ts-v2" in servers:
        from bench.peers import PeerError, describe_ts, ts_peer

        try:
            ts = ts_peer()
        except PeerError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        print(f"ts-v1, ts-v2: {describe_ts(ts)}")
    cmds = [c for c in commands(servers, fastmcp, ts) if c.transport in transports]
    print(f"python {sys.version.split()[0]}, servers on CPU {cpu}, {args.warmup} warm-up + {args.runs} rounds",
          flush=True)
    warn_if_busy()
    timings: dict[tuple[str, str], list[Timing]] = defaultdict(list)
    try:
        for round_no in range(args.warmup + args.runs):
            for cmd in cmds:
                t = measure(cmd, cpu, args.timeout) if round_no < args.warmup else measure_clean(cmd, cpu, args)
                if round_no >= args.warmup:
                    timings[(cmd.server, cmd.transport)].append(t)
            label = "warm-up" if round_no < args.warmup else f"round {round_no - args.warmup + 1}"
            print(f"  {label}: " + ", ".join(
                f"{c.server}/{c.transport} {timings[(c.server, c.transport)][-1].total * 1000:.0f} ms"
                + ("" if timings[(c.server, c.transport)][-1].clean else " (noisy)")
                for c in cmds if timings[(c.server, c.transport)]) if round_no >= args.warmup else "done", flush=True)
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1

    def ms(values: list[float]) -> str:
        return f"{statistics.median(values) * 1000:8.0f}"

    print()
    print(f"{'transport':<9} {'server':<9} {'median ms':>9} {'min ms':>8} {'max ms':>8} {'listening ms':>12}"
          f" {'/ official':>10} {'/ fastmcp':>10} {'/ ts-v1':>10} {'clean':>6}")
    rows: list[dict[str, Any]] = []
    for transport in transports:
        base = {s: statistics.median(t.total for t in kept(timings[(s, transport)])) for s in servers
                if timings.get((s, transport))}
        for server in servers:
            got = timings.get((server, transport))
            if not got:
                continue
            clean = [t for t in got if t.clean]
            got = kept(got)
            totals = [t.total for t in got]
            listening = [t.listening for t in got]
            median = statistics.median(totals)
            ratios = [f"{median / base[ref]:>10.2f}" if ref in base else f"{'–':>10}" for ref in RATIOS]
            print(f"{transport:<9} {server:<9} {ms(totals)} {min(totals) * 1000:8.0f} {max(totals) * 1000:8.0f} "
                  f"{ms(listening) if transport == 'http' else '–':>12} {' '.join(ratios)} "
                  f"{len(clean):>3}/{len(timings[(server, transport)]):<2}")
            rows.append({"transport": transport, "server": server, "runs_s": totals, "listening_s": listening,
                         "median_s": median, "clean": len(clean), "runs": len(timings[(server, transport)])})
    for transport in transports:
        ours = [r for r in rows if r["transport"] == transport and r["server"] == "wiremcp"]
        ref = [r for r in rows if r["transport"] == transport and r["server"] == "official"]
        if ours and ref:
            verdict = "met" if ours[0]["median_s"] <= ref[0]["median_s"] else "NOT MET"
            print(f"issue 7 target, {transport}: cold start wiremcp {ours[0]['median_s'] * 1000:.0f} ms <= official "
                  f"{ref[0]['median_s'] * 1000:.0f} ms: {verdict}")

    if args.importtime > 0:
        for server in ("wiremcp", "official"):
            for cmd in cmds:
                if cmd.server != server:
                    continue
                try:
                    stderrs = [measure(cmd, cpu, args.timeout, importtime=True).stderr for _ in range(args.importtime)]
                except BenchError as exc:
                    print(f"error: {exc}", file=sys.stderr)
                    return 1
                print(f"\n{server} {cmd.transport} (python -X importtime, {args.importtime} runs):")
                print("\n".join(import_profile(stderrs, args.top)))
    if args.json is not None:
        args.json.write_text(json.dumps({"date": time.strftime("%Y-%m-%d"), "results": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
