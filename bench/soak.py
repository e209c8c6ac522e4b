"""Soak: the local cluster (``deploy/local_cluster.py``: Redis, N replicas of ``uvicorn app:asgi`` serving
``tests.support.rolling_server``, the real nginx with ``deploy/nginx.conf``) under continuous load in both
protocol eras (``bench/rolling_load.py``) for a long time, with a rolling replacement of one replica every
``--restart-every`` seconds (round robin) and one Redis restart, its data kept on disk (append-only file).

    .venv/bin/python bench/soak.py [--minutes 30] [--replicas 3] [--clients 8] [--restart-every 180]
                                   [--redis-restart-at 0.5] [--redis-down 1] [--log-dir DIR]

Every ~10 s it samples the resident memory of every replica process (``VmRSS`` of ``/proc/PID/status``) and
prints a progress line; at the end: each process's RSS (start, peak, end, and whether it stayed within 10%
after its warm-up), requests per second, errors by kind, lost or duplicated events and notifications, how the
replaced processes exited, and a one-line verdict (``PASS``, or ``FAIL`` and why). Exit status 0 on PASS.

While Redis is away, the replicas answer 503 with ``Retry-After``: the load sends those requests again
(counted as retried, not failed). ``tests/e2e/test_soak.py`` runs this for a minute.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

if __package__ in (None, ""):  # run as a script: ``python bench/soak.py``
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.rolling_counts import Judged
from bench.rolling_load import LoadOptions, Report, RollingLoad
from deploy.local_cluster import LocalCluster, Replica, Retired

SERVER = "tests.support.rolling_server:server"
FLAT = 0.10
"""RSS may grow this much (a fraction) after the warm-up and still count as flat."""
WARM_UP = 0.3
"""The share of a process's life (at least ``MIN_WARM_UP`` seconds) before its RSS is held to ``FLAT``."""
MIN_WARM_UP = 30.0
MIN_JUDGED = 60.0
"""Seconds of samples after the warm-up needed to judge flatness (shorter lives: n/a)."""
CLEAN_EXITS = (0, -signal.SIGTERM)
"""How a replica drained to its end exits: 0, or by the signal uvicorn raises again once it has shut down."""


@dataclass(frozen=True)
class SoakOptions:
    minutes: float = 30.0
    replicas: int = 3
    clients: int = 8
    """Split between the eras: half handshake-era sessions (the odd one too), half stateless clients."""
    restart_every: float = 180.0
    redis_restart_at: float | None = 0.5
    """When Redis restarts, as a fraction of the run (None: never)."""
    redis_down: float = 1.0
    """Seconds Redis stays away."""
    sample_every: float = 10.0
    drain_seconds: float = 3.0
    log_dir: Path | None = None

    @property
    def seconds(self) -> float:
        return self.minutes * 60


@dataclass
class Rss:
    """One replica process's resident memory over its life: (seconds into the run, KiB) samples."""

    name: str
    samples: list[tuple[float, int]] = field(default_factory=list)

    @property
    def start(self) -> int:
        return self.samples[0][1]

    @property
    def peak(self) -> int:
        return max(kib for _, kib in self.samples)

    @property
    def end(self) -> int:
        return self.samples[-1][1]

    def flat(self) -> bool | None:
        """Within ``FLAT`` of its first sample after the warm-up, for the rest of its life; None if too short."""
        first, last = self.samples[0][0], self.samples[-1][0]
        warm = first + max(MIN_WARM_UP, WARM_UP * (last - first))
        after = [kib for t, kib in self.samples if t >= warm]
        if len(after) < 3 or last - warm < MIN_JUDGED:
            return None
        return max(after) <= after[0] * (1 + FLAT)


def rss_kib(pid: int) -> int | None:
    """``VmRSS`` of a process in KiB; None once it has gone."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def exit_problems(retired: list[Retired]) -> list[str]:
    """What is wrong with how the replaced processes ended: killed, an unclean status, a traceback."""
    out = []
    for old in retired:
        name = old.replica.name
        output = old.replica.output()
        if old.killed:
            out.append(f"{name} did not exit within {old.bound:.0f}s of SIGTERM (killed)")
        elif old.returncode not in CLEAN_EXITS:
            out.append(f"{name} exited with {old.returncode}")
        out += log_problems([old.replica])
        if "timeout graceful shutdown exceeded" in output.lower():
            out.append(f"{name} was cut by uvicorn's graceful-shutdown timeout, not ended by the drain")
    return out


def log_problems(replicas: list[Replica]) -> list[str]:
    """The replicas that logged a traceback (each quoted by the exception that ended its first one)."""
    return [f"{replica.name} logged a traceback ({_traceback_end(output)})" for replica in replicas
            if "Traceback" in (output := replica.output())]


def retired_summary(retired: list[Retired]) -> str:
    """One line: each replaced process, its exit status and how long it took from SIGTERM to exit."""
    return "replaced processes (exit status, seconds from SIGTERM to exit): " + ", ".join(
        f"{old.replica.name} {old.returncode} {old.drain_seconds or 0:.1f}s" for old in retired)


def _traceback_end(output: str) -> str:
    """The exception that ends the first traceback in ``output`` (the last of its chain)."""
    found = "?"
    for line in output[output.index("Traceback"):].splitlines()[1:]:
        if line[:1].isdigit() or line.startswith(("INFO", "WARNING", "ERROR")):
            break  # the next log record
        if line and not line.startswith((" ", "Traceback", "The above exception", "During handling")):
            found = line.strip()[:200]
    return found


@dataclass
class SoakResult(Judged):
    options: SoakOptions
    report: Report
    rss: list[Rss]
    retired: list[Retired]
    replacements: list[str]
    """What the run did, in order, with when (``t=..s replica-0 -> replica-0-r1``, ``Redis restarted``)."""
    serving: list[Replica]
    """The replicas serving at the end."""

    def problems(self) -> list[str]:
        out = self.report.problems() + exit_problems(self.retired) + log_problems(self.serving)
        out += [f"{r.name}'s RSS grew from {r.samples[0][1] // 1024} to {r.peak // 1024} MiB after its warm-up"
                for r in self.rss if r.flat() is False]
        return out

    def summary(self) -> str:
        judged = [r for r in self.rss if r.flat() is not None]
        return (f"{self.report.http_requests} requests in {self.report.seconds:.0f}s "
                f"({self.report.requests_per_second:.1f}/s), {len(self.retired)} replicas replaced, nothing failed "
                f"or lost ({self.report.retried} retried), RSS flat in {len(judged)} of {len(self.rss)} processes "
                f"(the others too short to judge)")

    def render(self) -> str:
        lines = ["RSS per replica process (MiB): start, peak, end, flat within 10% after warm-up"]
        for r in self.rss:
            flat = {True: "yes", False: "NO", None: "n/a (too short)"}[r.flat()]
            lines.append(f"  {r.name:<16} {len(r.samples):>4} samples  {r.start / 1024:7.1f} {r.peak / 1024:7.1f} "
                         f"{r.end / 1024:7.1f}  {flat}")
        lines.append(retired_summary(self.retired))
        lines.append("events: " + "; ".join(self.replacements))
        lines.append(self.report.render())
        return "\n".join(lines)


async def soak(cluster: LocalCluster, options: SoakOptions, log: Callable[[str], None] = print) -> SoakResult:
    """The load against ``cluster`` for ``options.seconds``, replicas replaced and Redis restarted on schedule,
    RSS sampled; the cluster is the caller's (``cluster_for``)."""
    handshake = (options.clients + 1) // 2
    load = RollingLoad(cluster.url, LoadOptions(handshake_clients=handshake,
                                                stateless_clients=options.clients - handshake))
    rss: dict[str, Rss] = {}
    done: list[str] = []
    await load.start()
    began = time.monotonic()

    def elapsed() -> float:
        return time.monotonic() - began

    def sample() -> None:
        for replica in list(cluster.replicas):
            kib = rss_kib(replica.process.pid)
            if kib is not None:
                rss.setdefault(replica.name, Rss(replica.name)).samples.append((elapsed(), kib))

    async def sampler() -> None:
        while True:
            sample()
            report = load.report()
            sizes = "/".join(f"{r.end // 1024}" for r in rss.values() if r.name in {x.name for x in cluster.replicas})
            log(f"t={elapsed():6.0f}s  {report.requests_per_second:6.1f} req/s  failed "
                f"{report.failed}  retried {report.retried}  notifications {report.notifications_received}/"
                f"{report.notifications_sent}  tasks {report.tasks_completed}/{report.tasks_created}  RSS {sizes} MiB")
            await asyncio.sleep(options.sample_every)  # the sampling period

    schedule = [(options.restart_every * n, "replace") for n in range(1, int(options.seconds // options.restart_every) + 1)
                if options.restart_every * n < options.seconds]
    if options.redis_restart_at is not None:
        schedule.append((options.seconds * options.redis_restart_at, "redis"))
    schedule.sort()
    sampling = asyncio.create_task(sampler())
    try:
        turn = 0
        for at, what in schedule:
            await asyncio.sleep(max(0.0, at - elapsed()))  # the schedule
            if what == "replace":
                index = turn % len(cluster.replicas)
                turn += 1
                old = cluster.replicas[index].name
                sample()  # its last size
                burst = asyncio.create_task(load.burst())  # many requests on kept-alive connections at SIGTERM
                await load.progressed(16)
                in_flight = load.in_flight()
                new = await asyncio.to_thread(cluster.replace, index)
                await burst
                balanced = await asyncio.to_thread(cluster.wait_balanced, index)
                done.append(f"t={at:.0f}s {old} -> {new.name}" + ("" if balanced else " (nginx did not use it)"))
                log(f"t={elapsed():6.0f}s  replaced {old} -> {new.name}; in flight at SIGTERM: {in_flight}")
            else:
                await asyncio.to_thread(cluster.restart_redis, options.redis_down)
                done.append(f"t={at:.0f}s Redis restarted ({options.redis_down:.0f}s away)")
                log(f"t={elapsed():6.0f}s  Redis restarted")
        await asyncio.sleep(max(0.0, options.seconds - elapsed()))  # the run's length
    finally:
        sampling.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sampling
        sample()
        report = await load.stop()
    retired = await asyncio.to_thread(cluster.wait_retired)
    return SoakResult(options, report, list(rss.values()), retired, done, list(cluster.replicas))


@contextlib.contextmanager
def cluster_for(options: SoakOptions) -> Iterator[LocalCluster]:
    """The cluster a soak runs on: its own Redis, persistent (it restarts), output in ``options.log_dir`` (or
    a temporary folder)."""
    with contextlib.ExitStack() as stack:
        log_dir = options.log_dir or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="wiremcp-soak-")))
        env = {"WIREMCP_DRAIN_SECONDS": str(options.drain_seconds), "WIREMCP_TASK_POLL_INTERVAL_MS": "200",
               "WIREMCP_LOG_LEVEL": "INFO", "PYTHONDONTWRITEBYTECODE": "1"}
        yield stack.enter_context(LocalCluster(options.replicas, server=SERVER, env=env, log_dir=log_dir,
                                               access_log=False, redis_persistence=True))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--clients", type=int, default=8, help="half handshake-era sessions, half stateless")
    parser.add_argument("--restart-every", type=float, default=180.0, help="seconds between replica replacements")
    parser.add_argument("--redis-restart-at", type=float, default=0.5,
                        help="when Redis restarts, as a fraction of the run (negative: never)")
    parser.add_argument("--redis-down", type=float, default=1.0, help="seconds Redis stays away")
    parser.add_argument("--drain-seconds", type=float, default=3.0, help="WIREMCP_DRAIN_SECONDS")
    parser.add_argument("--log-dir", type=Path, default=None, help="keep every process's output there")
    args = parser.parse_args(argv)
    if args.replicas < 1 or args.clients < 1 or args.minutes <= 0 or args.restart_every <= 0:
        parser.error("--replicas, --clients, --minutes and --restart-every must be positive")
    options = SoakOptions(minutes=args.minutes, replicas=args.replicas, clients=args.clients,
                          restart_every=args.restart_every,
                          redis_restart_at=args.redis_restart_at if args.redis_restart_at >= 0 else None,
                          redis_down=args.redis_down, drain_seconds=args.drain_seconds, log_dir=args.log_dir)
    if args.log_dir is not None:
        args.log_dir.mkdir(parents=True, exist_ok=True)

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    with cluster_for(options) as cluster:
        log(f"soak: {cluster.url}, {options.replicas} replicas, {options.clients} clients, {options.minutes:g} min")
        result = asyncio.run(soak(cluster, options, log))
    print(result.render())
    print(result.verdict)
    return 0 if result.passed else 1


if __name__ == "__main__":
    sys.exit(main())
