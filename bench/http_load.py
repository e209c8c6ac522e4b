"""Streamable HTTP load test: mcpwire vs the official MCP SDK vs a bare-ASGI ceiling, driven by wrk.

    .venv/bin/python bench/http_load.py                      # defaults: 5 s runs after a 2 s warm-up
    .venv/bin/python bench/http_load.py --duration 10 --servers mcpwire,official,ceiling

For every server: start uvicorn on a free 127.0.0.1 port pinned to one core (``taskset -c 0``), do the
initialize handshake over HTTP (keeping the ``Mcp-Session-Id``), send ``notifications/initialized``,
check one ``tools/call`` answer in full, then run ``wrk`` pinned to the other core (``taskset -c 1``)
with 32 connections sending ``tools/call`` (and ``tools/list``) on that one session. The wrk script
(``bench/tools_call.lua``) checks every answer (status 200 and the expected JSON-RPC result, also when
it comes as an SSE stream). See bench/README.md.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import importlib.util
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.machine import warn_if_busy  # noqa: E402
from bench.servers import EXPECTED, PROTOCOL_VERSION, TEXT  # noqa: E402

LUA = ROOT / "bench" / "tools_call.lua"
PATH = "/mcp"
ACCEPT = "application/json, text/event-stream"
METHODS = ("tools/call", "tools/list")


@dataclass(frozen=True, slots=True)
class ServerSpec:
    name: str
    app: str
    factory: bool = False
    env: dict[str, str] = field(default_factory=dict)
    note: str = ""


SERVERS: dict[str, ServerSpec] = {
    spec.name: spec for spec in (
        ServerSpec("ceiling", "bench.servers:ceiling_app",
                   note="bare ASGI: orjson parse, fixed result"),
        ServerSpec("mcpwire", "app:asgi", env={"MCPWIRE_SERVER": "bench.servers:mcpwire_server"},
                   note="app:asgi, default settings (JSON unless the handler streams or runs > 0.5 s)"),
        ServerSpec("mcpwire-json", "app:asgi",
                   env={"MCPWIRE_SERVER": "bench.servers:mcpwire_server", "MCPWIRE_JSON_RESPONSE": "true"},
                   note="app:asgi, MCPWIRE_JSON_RESPONSE=true"),
        ServerSpec("official", "bench.servers:official_json_app", factory=True,
                   note="mcp 2.3.0 streamable_http_app(json_response=True, stateless_http=False)"),
        ServerSpec("official-sse", "bench.servers:official_sse_app", factory=True,
                   note="mcp 2.3.0 streamable_http_app(json_response=False, stateless_http=False)"),
    )
}
DEFAULT_SERVERS = "ceiling,mcpwire,mcpwire-json,official,official-sse"


@dataclass(slots=True)
class Result:
    server: str
    method: str
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


@contextlib.contextmanager
def uvicorn_server(spec: ServerSpec, cpu: str | None, loop: str, http: str, logdir: Path) -> Iterator[int]:
    """Run ``spec`` under uvicorn on a free loopback port; yields the port and always stops the process."""
    port = free_port()
    argv = [sys.executable, "-m", "uvicorn", spec.app, "--host", "127.0.0.1", "--port", str(port),
            "--log-level", "warning", "--no-access-log", "--lifespan", "on", "--loop", loop, "--http", http]
    if spec.factory:
        argv.append("--factory")
    env = {**os.environ, "MCPWIRE_LOG_LEVEL": "WARNING", "PYTHONPATH": str(ROOT), **spec.env}
    log = logdir / f"{spec.name}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(pin(cpu, argv), cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT)
    try:
        wait_listening(proc, port, log)
        yield port
    finally:
        stop(proc)


# -- the handshake ---------------------------------------------------------------------------------
def post(port: int, message: dict[str, Any], session: str | None) -> tuple[int, dict[str, str], Any]:
    """POST one message; returns status, headers (lower-case names) and the JSON-RPC answer (JSON or SSE)."""
    headers = {"Accept": ACCEPT, "Content-Type": "application/json", "MCP-Protocol-Version": PROTOCOL_VERSION}
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
    """initialize + notifications/initialized; checks one tools/call in full. Returns the session id."""
    status, headers, answer = post(port, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": PROTOCOL_VERSION, "capabilities": {},
        "clientInfo": {"name": "mcpwire-bench", "version": "1.0.0"}}}, None)
    session = headers.get("mcp-session-id")
    if status != 200 or not isinstance(answer, dict) or "result" not in answer or not session:
        raise BenchError(f"initialize failed: HTTP {status} {answer!r} (session {session!r})")
    status, _, _ = post(port, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    if status != 202:
        raise BenchError(f"notifications/initialized: expected 202, got {status}")
    status, _, answer = post(port, {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                    "params": {"name": "word_count", "arguments": {"text": TEXT}}}, session)
    result = answer.get("result") if isinstance(answer, dict) else None
    if status != 200 or not isinstance(result, dict) or result.get("structuredContent") != EXPECTED \
            or result.get("isError"):
        raise BenchError(f"tools/call check failed: HTTP {status} {answer!r}")
    return session


# -- wrk -------------------------------------------------------------------------------------------
_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3}


def _ms(text: str) -> float:
    match = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text)
    if match is None:
        raise BenchError(f"cannot parse the latency {text!r}")
    return float(match.group(1)) * _UNITS[match.group(2)]


def parse_wrk(out: str, server: str, method: str) -> Result:
    """Requests/sec and the --latency distribution from wrk's report, counters from the script's BENCH_JSON."""
    line = next((ln for ln in out.splitlines() if ln.startswith("BENCH_JSON ")), None)
    if line is None:
        raise BenchError(f"no BENCH_JSON line in wrk's output:\n{out}")
    data = json.loads(line[len("BENCH_JSON "):])
    dist = dict(re.findall(r"^\s+(\d+)%\s+([\d.]+(?:us|ms|s|m))\s*$", out, re.MULTILINE))
    rps = re.search(r"^Requests/sec:\s+([\d.]+)", out, re.MULTILINE)
    seconds = data["duration_us"] / 1e6
    return Result(
        server=server, method=method, requests=int(data["requests"]), seconds=seconds,
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


def run_wrk(port: int, session: str, method: str, seconds: int, args: argparse.Namespace) -> str:
    argv = pin(args.client_cpu, [
        "wrk", f"-t{args.threads}", f"-c{args.connections}", f"-d{seconds}s", f"--timeout={args.timeout:g}s",
        "--latency", "-s", str(LUA), f"http://127.0.0.1:{port}{PATH}", "--",
        method, session, PROTOCOL_VERSION, TEXT, str(EXPECTED["words"]), str(EXPECTED["chars"]),
    ])
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        out, _ = proc.communicate(timeout=seconds + args.timeout + 30)
    except subprocess.TimeoutExpired as exc:
        raise BenchError("wrk did not finish in time") from exc
    finally:
        stop(proc, grace=2)
    text = out.decode(errors="replace")
    if proc.returncode != 0:
        raise BenchError(f"wrk exited with {proc.returncode}:\n{text}")
    return text


def combine(runs: list[Result]) -> Result:
    """The median run by req/s, with the counters summed over all runs."""
    ordered = sorted(runs, key=lambda r: r.rps)
    result = ordered[len(ordered) // 2]
    result.ok, result.requests = sum(r.ok for r in runs), sum(r.requests for r in runs)
    result.non_2xx, result.bad_body = sum(r.non_2xx for r in runs), sum(r.bad_body for r in runs)
    result.socket_errors, result.timeouts = sum(r.socket_errors for r in runs), sum(r.timeouts for r in runs)
    result.sse = sum(r.sse for r in runs)
    result.first_bad = next((r.first_bad for r in runs if r.first_bad), "")
    return result


def bench_all(specs: list[ServerSpec], args: argparse.Namespace, logdir: Path) -> list[Result]:
    """Start every server (each idle but the one under load), warm each up, then run ``--repeat`` rounds.

    Each round measures every server and method once, so that other load on the machine spreads over
    all of them instead of skewing one.
    """
    with contextlib.ExitStack() as stack:
        sessions: dict[str, tuple[int, str]] = {}
        for spec in specs:
            port = stack.enter_context(uvicorn_server(spec, args.server_cpu, args.loop, args.http, logdir))
            sessions[spec.name] = (port, handshake(port))
            print(f"{spec.name}: {spec.note} (port {port})", flush=True)
        runs: dict[tuple[str, str], list[Result]] = {}
        for round_no in range(args.repeat):
            for spec in specs:
                port, session = sessions[spec.name]
                for method in args.methods:
                    if round_no == 0 and args.warmup > 0:
                        run_wrk(port, session, method, args.warmup, args)
                    out = run_wrk(port, session, method, args.duration, args)
                    if args.verbose:
                        print(out)
                    r = parse_wrk(out, spec.name, method)
                    runs.setdefault((spec.name, method), []).append(r)
                    print(f"  round {round_no + 1}: {spec.name:<13} {method:<11} {r.rps:>9.0f} req/s  "
                          f"p50 {r.p50_ms:7.2f} ms  p99 {r.p99_ms:7.2f} ms  ok {r.ok}/{r.requests}"
                          + (f"  SSE answers {r.sse}" if r.sse else "")
                          + (f"  FAILURES {r.failures}: {r.first_bad}" if r.failures else ""), flush=True)
    return [combine(group) for group in runs.values()]


# -- report ----------------------------------------------------------------------------------------
def report(results: Sequence[Result]) -> None:
    print()
    print(f"{'server':<13} {'method':<11} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'requests':>9} "
          f"{'non-2xx':>8} {'bad body':>8} {'sock err':>8} {'SSE':>7}")
    for r in results:
        print(f"{r.server:<13} {r.method:<11} {r.rps:>9.0f} {r.p50_ms:>8.2f} {r.p99_ms:>8.2f} {r.requests:>9} "
              f"{r.non_2xx:>8} {r.bad_body:>8} {r.socket_errors + r.timeouts:>8} {r.sse:>7}")
    by_key = {(r.server, r.method): r for r in results}
    lines: list[str] = []
    for method in dict.fromkeys(r.method for r in results):
        for ours in ("mcpwire", "mcpwire-json"):
            for ref in ("official", "official-sse", "ceiling"):
                a, b = by_key.get((ours, method)), by_key.get((ref, method))
                if a is None or b is None or not b.rps or not b.p50_ms or not b.p99_ms:
                    continue
                lines.append(f"{ours + ' / ' + ref:<30} {method:<11} {a.rps / b.rps:>10.2f} "
                             f"{a.p50_ms / b.p50_ms:>10.2f} {a.p99_ms / b.p99_ms:>10.2f}")
    if lines:
        print()
        print(f"{'ratio':<30} {'method':<11} {'req/s':>10} {'p50':>10} {'p99':>10}")
        print("\n".join(lines))


def environment(args: argparse.Namespace) -> str:
    def installed(module: str) -> str:
        return "installed" if importlib.util.find_spec(module) else "not installed"

    return (f"python {sys.version.split()[0]}, uvicorn --loop {args.loop} --http {args.http} "
            f"(uvloop {installed('uvloop')}, httptools {installed('httptools')}), {os.cpu_count()} CPUs, "
            f"server on CPU {args.server_cpu}, wrk on CPU {args.client_cpu}, -t{args.threads} -c{args.connections}, "
            f"{args.warmup:g} s warm-up + {args.repeat} round(s) of {args.duration:g} s per server and method")


def _terminate(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--servers", default=DEFAULT_SERVERS,
                        help=f"comma-separated, from {', '.join(SERVERS)} (default: %(default)s)")
    parser.add_argument("--methods", default=",".join(METHODS), help="comma-separated (default: %(default)s)")
    parser.add_argument("--duration", type=int, default=5, help="measured seconds per run (default: 5)")
    parser.add_argument("--warmup", type=int, default=2,
                        help="warm-up seconds per server and method, 0 for none (default: 2)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="rounds over all servers and methods; the median run (by req/s) is reported")
    parser.add_argument("--connections", type=int, default=32, help="wrk connections (default: 32)")
    parser.add_argument("--threads", type=int, default=1, help="wrk threads (default: 1)")
    parser.add_argument("--timeout", type=float, default=5.0, help="wrk per-request timeout in seconds")
    parser.add_argument("--server-cpu", default="0", help="CPU list for the server (taskset -c; default 0)")
    parser.add_argument("--client-cpu", default="1", help="CPU list for wrk (taskset -c; default 1)")
    parser.add_argument("--no-pin", action="store_true", help="do not pin processes with taskset")
    parser.add_argument("--loop", default="auto", help="uvicorn --loop (default: auto)")
    parser.add_argument("--http", default="auto", help="uvicorn --http (default: auto)")
    parser.add_argument("--json", type=Path, help="also write the results to this JSON file")
    parser.add_argument("--keep-logs", action="store_true", help="keep the server logs (their directory is printed)")
    parser.add_argument("-v", "--verbose", action="store_true", help="print wrk's full reports")
    args = parser.parse_args(argv)
    args.methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    names = [n.strip() for n in args.servers.split(",") if n.strip()]
    unknown = [n for n in names if n not in SERVERS] + [m for m in args.methods if m not in METHODS]
    if unknown:
        parser.error(f"unknown server or method: {', '.join(unknown)}")
    if args.repeat < 1 or args.duration < 1 or args.warmup < 0:
        parser.error("--repeat and --duration must be at least 1, --warmup at least 0 (wrk takes whole seconds)")
    if args.no_pin:
        args.server_cpu = args.client_cpu = None
    for tool in ("wrk", *(() if args.no_pin else ("taskset",))):
        if shutil.which(tool) is None:
            parser.error(f"{tool} is not installed (apt-get install -y {'wrk' if tool == 'wrk' else 'util-linux'})")

    signal.signal(signal.SIGTERM, _terminate)  # so that the finally blocks stop the servers
    print(environment(args), flush=True)
    warn_if_busy()
    results: list[Result] = []
    logdir = Path(tempfile.mkdtemp(prefix="mcpwire-bench-"))
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
        args.json.write_text(json.dumps({"environment": environment(args), "date": time.strftime("%Y-%m-%d"),
                                         "results": [asdict(r) for r in results]}, indent=2))
    failed = [r for r in results if r.failures]
    if failed:
        print(f"\nWARNING: failed answers in {', '.join(f'{r.server} {r.method}' for r in failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
