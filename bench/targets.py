"""The performance table of the documentation (docs/performance.md), from the JSON that http_load.py, cold_start.py, stdio_load.py and workers.py write.

    .venv/bin/python bench/targets.py --http h.json --cold c.json --stdio s.json --workers w.json
    .venv/bin/python bench/targets.py --http h.json --markdown          # the same table in Markdown
    .venv/bin/python bench/targets.py --run bench/.results              # run all four in sequence, then the table
    .venv/bin/python bench/targets.py --run /tmp/t --quick              # the same with 1 s runs: a functional check

One row per target: the ratio(s) measured, the figures behind them, and ``met``, ``NOT MET`` or ``not measured``
(an input, or a server in it, is missing: the TypeScript rows until ts-v1 and ts-v2 have run); ``invalid`` when a
figure comes from a run with wrong answers. A figure from runs that were all noisy (other processes busy, see
``--max-other`` in the scripts) is marked so. Each target's ratio is wiremcp's figure over the reference's: for
req/s at least the goal, for p99 and cold start at most. Nothing is measured here: the table only reads files.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import textwrap
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.machine import machine_line  # noqa: E402

HANDSHAKE, STATELESS = "2025-11-25", "2026-07-28"
ERAS = (HANDSHAKE, STATELESS)
CALL, LIST = "tools/call", "tools/list"
Data = dict[str, Any]


@dataclass(slots=True)
class Item:
    """One measured ratio (or fact) of a target."""

    label: str
    shown: str = "–"
    """The ratio as printed (or what was found)."""
    ok: bool | None = None
    """Whether it meets the goal; None: not measured."""
    figures: str = ""
    invalid: bool = False
    """A figure behind it comes from a run with wrong answers."""


@dataclass(slots=True)
class Row:
    target: str
    goal: str
    items: list[Item] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        if any(item.invalid for item in self.items):
            return "invalid"
        if any(item.ok is False for item in self.items):
            return "NOT MET"
        if not self.items or any(item.ok is None for item in self.items):
            return "not measured"
        return "met"


# -- reading the inputs -----------------------------------------------------------------------------
def load(path: Path | None) -> Data | None:
    if path is None or not path.is_file():
        return None
    data: Data = json.loads(path.read_text())
    return data


def http_key(data: Data | None) -> dict[tuple[str, str, str], Data]:
    if data is None:
        return {}
    return {(r["server"], r["era"], r["workload"]): r for r in data.get("results", [])}


def failures(r: Data) -> int:
    """http_load.Result.failures, from its fields."""
    if "failures" in r:
        return int(r["failures"])
    return int(r["requests"] - r["ok"] + r.get("socket_errors", 0) + r.get("timeouts", 0))


def noisy(*runs: Data) -> str:
    return " (noisy)" if any(r.get("clean_runs", 1) == 0 for r in runs) else ""


def n(value: float) -> str:
    return f"{value:,.0f}"


def ratio_item(
    label: str,
    a: Data | None,
    b: Data | None,
    attr: str,
    goal: float,
    names: tuple[str, str] = ("", ""),
) -> Item:
    """a[attr] / b[attr] against ``goal`` (at least; at most for latencies, ``attr`` ending in ``_ms``), with
    both figures."""
    if a is None or b is None or not b.get(attr):
        missing = " and ".join(name for name, run in zip(names, (a, b), strict=True) if run is None and name)
        return Item(label, figures=f"no {missing}" if missing else "")
    value = a[attr] / b[attr]
    latency = attr.endswith("_ms")

    def fmt(v: float) -> str:
        return f"{v:.2f} ms" if latency else f"{n(v)} req/s"

    shown = f"{names[0] or 'a'} {fmt(a[attr])} / {names[1] or 'b'} {fmt(b[attr])}"
    meets = value <= goal if latency else value >= goal
    return Item(label, f"{value:.2f}", meets, shown + noisy(a, b), bool(failures(a) or failures(b)))


# -- the targets ----------------------------------------------------------------------------------
def _against_ceiling(got: dict[tuple[str, str, str], Any], title: str, goal_text: str, attr: str,
                     goal: float) -> Row:
    """wiremcp against the ceiling on ``attr``, in each era and workload."""
    row = Row(title, goal_text)
    for era in ERAS:
        for workload in (CALL, LIST):
            row.items.append(ratio_item(f"{era} {workload}", got.get(("wiremcp", era, workload)),
                                        got.get(("ceiling", era, workload)), attr, goal,
                                        names=("wiremcp", "ceiling")))
    return row


def http_rows(data: Data | None) -> list[Row]:
    got = http_key(data)
    rows = []

    rows.append(_against_ceiling(got, "wiremcp req/s / bare-ASGI ceiling's, tools/call and tools/list, both eras",
                                 ">= 0.70", "rps", 0.7))

    row = Row("wiremcp stateless era req/s / its handshake era's", ">= 1.00")
    for workload in (CALL, LIST):
        item = ratio_item(
            workload,
            got.get(("wiremcp", STATELESS, workload)),
            got.get(("wiremcp", HANDSHAKE, workload)),
            "rps",
            1.0,
            names=(STATELESS, HANDSHAKE),
        )
        ceiling = (got.get(("ceiling", STATELESS, workload)), got.get(("ceiling", HANDSHAKE, workload)))
        if ceiling[0] and ceiling[1] and ceiling[1]["rps"]:
            item.figures += f"; the ceiling's own: {ceiling[0]['rps'] / ceiling[1]['rps']:.2f}"
        row.items.append(item)
    rows.append(row)

    rows.append(_against_ceiling(got, "wiremcp p99 / the ceiling's p99, tools/call and tools/list, both eras",
                                 "<= 1.50", "p99_ms", 1.5))

    for peer, era, goal in (("ts-v1", HANDSHAKE, 1.5), ("ts-v2", STATELESS, 5.0)):
        what = "v1 with sessions, handshake era" if peer == "ts-v1" else "v2, stateless era"
        row = Row(f"wiremcp req/s / the TypeScript SDK's ({peer}: {what})", f">= {goal:.2f}")
        for workload in (CALL, LIST):
            row.items.append(
                ratio_item(
                    f"{era} {workload}",
                    got.get(("wiremcp", era, workload)),
                    got.get((peer, era, workload)),
                    "rps",
                    goal,
                    names=("wiremcp", peer),
                )
            )
        rows.append(row)

    row = Row("a gateway's hop: tools/call through a gateway to a stdio child / served directly", "reported")
    for era in ERAS:
        item = ratio_item(f"{era} {CALL}", got.get(("wiremcp-gateway", era, CALL)), got.get(("wiremcp", era, CALL)),
                          "rps", 0.0, names=("gateway", "direct"))
        if item.ok is not None:
            item.ok = True  # a ratio to report: no goal
        row.items.append(item)
    rows.append(row)

    row = Row("wiremcp-redis req/s / wiremcp's (in memory), handshake-era tools/call", ">= 0.80")
    row.items.append(
        ratio_item(
            f"{HANDSHAKE} {CALL}",
            got.get(("wiremcp-redis", HANDSHAKE, CALL)),
            got.get(("wiremcp", HANDSHAKE, CALL)),
            "rps",
            0.8,
            names=("redis", "memory"),
        )
    )
    rows.append(row)

    row = Row("stateless era unaffected by Redis: wiremcp-redis req/s / wiremcp's", ">= 0.90 (≈ 1.0)")
    for workload in (CALL, LIST):
        row.items.append(
            ratio_item(
                f"{STATELESS} {workload}",
                got.get(("wiremcp-redis", STATELESS, workload)),
                got.get(("wiremcp", STATELESS, workload)),
                "rps",
                0.9,
                names=("redis", "memory"),
            )
        )
    rows.append(row)
    return rows


def cold_rows(data: Data | None) -> list[Row]:
    got = {(r["transport"], r["server"]): r for r in (data or {}).get("results", [])}
    row = Row(
        "cold start (spawn to the first initialize answer): wiremcp / the TypeScript SDK's (ts-v1)", "<= 1.00"
    )
    for transport in ("stdio", "http"):
        a, b = got.get((transport, "wiremcp")), got.get((transport, "ts-v1"))
        if a is None or b is None or not b["median_s"]:
            missing = " and ".join(name for name, r in (("wiremcp", a), ("ts-v1", b)) if r is None)
            row.items.append(Item(transport, figures=f"no {missing}" if data is not None else ""))
            continue
        value = a["median_s"] / b["median_s"]
        figures = (
            f"wiremcp {a['median_s'] * 1000:.0f} ms / ts-v1 {b['median_s'] * 1000:.0f} ms "
            f"(medians of {a['runs']} and {b['runs']})" + noisy(a, b)
        )
        row.items.append(Item(transport, f"{value:.2f}", value <= 1.0, figures))
    return [row]


def stdio_rows(data: Data | None) -> list[Row]:
    """Pipelined tools/call over stdio, a sync tool (wiremcp) and the same tool as an ``async def``
    (wiremcp-async): against the batching line loop (ceiling), and against the TypeScript SDK v1."""
    got = {r["server"]: r for r in (data or {}).get("results", [])}
    batch = f"{data['calls'] if data else '?'} calls, window {data['window'] if data else '?'}"
    rows = []
    for reference, goal in (("ceiling", 0.5), ("ts-v1", 1.0)):
        what = "the batching line loop's (ceiling)" if reference == "ceiling" else "the TypeScript SDK v1's"
        row = Row(f"stdio, pipelined tools/call: wiremcp calls/s / {what}", f">= {goal:.2f}")
        for ours, tool in (("wiremcp", "sync tool"), ("wiremcp-async", "async tool")):
            a, b = got.get(ours), got.get(reference)
            if a is None or b is None or not b["rate"]:
                missing = " and ".join(name for name, r in ((ours, a), (reference, b)) if r is None)
                row.items.append(Item(tool, figures=f"no {missing}" if data is not None else ""))
                continue
            value = a["rate"] / b["rate"]
            figures = f"{ours} {n(a['rate'])} / {reference} {n(b['rate'])} calls/s ({batch})"
            row.items.append(Item(tool, f"{value:.2f}", value >= goal, figures, bool(a["errors"] or b["errors"])))
        rows.append(row)
    return rows


def workers_rows(data: Data | None) -> list[Row]:
    """Throughput per core as workers are added (workers.py): N workers against one, per core the server side
    used (what each core serves; per available core, which also charges a worker left idle by an uneven
    split of wrk's connections, and per worker are in the figures)."""
    count = data["workers"] if data else 2
    got = {(r["server"], r["era"], r["workload"], r["workers"]): r for r in (data or {}).get("results", [])}
    comparisons = {(c["server"], c["era"], c["workload"]): c for c in (data or {}).get("comparisons", [])}
    rows = []
    for server, era, what in (
        ("wiremcp", STATELESS, "in memory, stateless era"),
        ("wiremcp-redis", HANDSHAKE, "Redis, handshake era"),
    ):
        row = Row(
            f"throughput per core with uvicorn --workers {count} ({what}): req/s per core used / one worker's",
            ">= 0.90",
        )
        workloads = sorted({w for (s, e, w, _) in got if s == server and e == era}) or [CALL]
        for workload in workloads:
            c = comparisons.get((server, era, workload))
            one, many = got.get((server, era, workload, 1)), got.get((server, era, workload, count))
            if c is None or one is None or many is None:
                row.items.append(Item(f"{era} {workload}"))
                continue
            split = " + ".join(f"{s:.2f}" for s in many["worker_cpu"])
            figures = (
                f"1 worker {n(one['rps'])} req/s; {count} workers {n(many['rps'])} req/s "
                f"(per worker {c['per_worker']:.2f} of one, per available core {c['per_core_available']:.2f}; "
                f"workers' CPU {split}, wrk {many['client_cpu']:.2f}, redis {many['backend_cpu']:.2f})"
            )
            ceiling = comparisons.get(("ceiling", STATELESS, workload))
            if ceiling is not None:
                figures += (f"; the ceiling's: per core used {ceiling['per_core_used']:.2f}, per worker "
                            f"{ceiling['per_worker']:.2f}")
            row.items.append(
                Item(
                    f"{era} {workload}",
                    f"{c['per_core_used']:.2f}",
                    c["per_core_used"] >= 0.9,
                    figures + noisy(one, many),
                    bool(failures(one) or failures(many)),
                )
            )
        rows.append(row)
    return rows


WORKER_PEERS = ("official-modern", "ts-v2")
"""The peers workers.py runs at 1 and N workers next to wiremcp (stateless era, sessionless all three)."""


def workers_peer_rows(data: Data | None) -> list[Row]:
    """wiremcp's lead over each peer at the same worker count (workers.py): whether it holds with N workers
    (official-modern as ``uvicorn --workers N`` like wiremcp, ts-v2 under Node's cluster)."""
    count = data["workers"] if data else 2
    got = {(r["server"], r["era"], r["workload"], r["workers"]): r for r in (data or {}).get("results", [])}
    row = Row("wiremcp req/s / each peer's at the same worker count (stateless era, tools/call)", ">= 1.00")
    for peer in WORKER_PEERS:
        for workers in sorted({1, count}):
            row.items.append(
                ratio_item(
                    f"{peer} {workers}w",
                    got.get(("wiremcp", STATELESS, CALL, workers)),
                    got.get((peer, STATELESS, CALL, workers)),
                    "rps",
                    1.0,
                    names=(f"wiremcp {workers}w", f"{peer} {workers}w"),
                )
            )
    return [row]


def http_stack(environment: str) -> str | None:
    """The loop and HTTP parser http_load's uvicorn used, from its environment line."""
    match = re.search(
        r"--loop (\S+) --http (\S+) \(uvloop (installed|not installed), httptools (installed|not installed)\)",
        environment,
    )
    if match is None:
        return None
    loop, http, uvloop, httptools = match.groups()
    if loop == "auto":
        loop = "uvloop" if uvloop == "installed" else "asyncio"
    if http == "auto":
        http = "httptools" if httptools == "installed" else "h11"
    return f"{loop} + {http}"


def stack_rows(http: Data | None, stdio: Data | None, workers: Data | None) -> list[Row]:
    row = Row(
        "the fast stack is the default: uvloop + httptools in the base install, and used",
        "uvloop + httptools",
    )
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    deps = {
        re.split(r"[\s<>=!~;\[]", dep, maxsplit=1)[0].lower(): dep for dep in project.get("dependencies", [])
    }
    base = [deps[name] for name in ("uvloop", "httptools") if name in deps]
    shown = ", ".join(
        dep.split(";")[0].strip() + (" (where it builds)" if ";" in dep else "") for dep in base
    )
    row.items.append(
        Item("base install", "yes" if len(base) == 2 else "no", len(base) == 2, shown or "neither")
    )
    used = http_stack(http["environment"]) if http else None
    row.items.append(
        Item("http_load runs", used or "–", None if used is None else used == "uvloop + httptools")
    )
    if workers is not None:
        used = f"{workers['loop']} + {workers['http']}"
        row.items.append(Item("workers runs", used, used == "uvloop + httptools"))
    loop = stdio.get("wiremcp_loop") if stdio else None
    row.items.append(
        Item("stdio_load: wiremcp stdio", loop or "–", None if loop is None else loop == "uvloop")
    )
    return [row]


def table(http: Data | None, cold: Data | None, stdio: Data | None, workers: Data | None) -> list[Row]:
    return [
        *http_rows(http),
        *cold_rows(cold),
        *stdio_rows(stdio),
        *workers_rows(workers),
        *workers_peer_rows(workers),
        *stack_rows(http, stdio, workers),
    ]


# -- output ---------------------------------------------------------------------------------------
def inputs_lines(files: dict[str, tuple[Path | None, Data | None]]) -> list[str]:
    lines = []
    for name, (path, data) in files.items():
        if data is None:
            lines.append(f"{name}: {'not given' if path is None else f'{path}: missing'}")
            continue
        what = data.get("environment") or data.get("machine") or ""
        extra = ""
        if name == "http" and data.get("workers", 1) != 1:
            extra = f" WARNING: run with --workers {data['workers']}; the ratios above assume one process"
        lines.append(f"{name}: {path} ({data.get('date', '?')}){': ' + what if what else ''}{extra}")
    return lines


def print_text(rows: list[Row], machine: str, inputs: list[str]) -> None:
    widths = (44, 18, 34, 60)
    print(f"machine: {machine}")
    print("\n".join(inputs))
    print()
    head = ("target", "goal", "measured", "figures", "verdict")
    print("  ".join(f"{h:<{w}}" for h, w in zip(head, (*widths, 0), strict=True)).rstrip())
    print("-" * (sum(widths) + 2 * len(widths) + 12))
    for row in rows:
        target = textwrap.wrap(row.target, widths[0])
        goal = textwrap.wrap(row.goal, widths[1])
        lines: list[tuple[str, str]] = []
        for item in row.items:
            figures = textwrap.wrap(item.figures, widths[3]) or [""]
            lines.append((f"{item.label} {item.shown}", figures[0]))
            lines.extend(("", more) for more in figures[1:])
        height = max(len(target), len(goal), len(lines))
        for i in range(height):
            cells = (
                target[i] if i < len(target) else "",
                goal[i] if i < len(goal) else "",
                *(lines[i] if i < len(lines) else ("", "")),
            )
            text = "  ".join(f"{cell:<{w}}" for cell, w in zip(cells, widths, strict=True))
            print((text + "  " + (row.verdict if i == 0 else "")).rstrip())
        print()


def print_markdown(rows: list[Row], machine: str, inputs: list[str]) -> None:
    def cell(values: Iterable[str]) -> str:
        return "<br>".join(v.replace("|", "\\|") for v in values)

    print(f"Machine: {machine}")
    print()
    for line in inputs:
        print(f"- {line}")
    print()
    print("| target | goal | measured | figures | verdict |")
    print("|---|---|---|---|---|")
    for row in rows:
        verdict = f"**{row.verdict}**" if row.verdict != "met" else row.verdict
        print(
            f"| {cell([row.target])} | {cell([row.goal])} | "
            f"{cell(f'{i.label}: **{i.shown}**' for i in row.items)} | {cell(i.figures or '–' for i in row.items)} "
            f"| {verdict} |"
        )


# -- --run ----------------------------------------------------------------------------------------
def commands(out: Path, quick: bool) -> list[tuple[str, list[str]]]:
    """The four benchmarks, each with the servers its script has among those the targets need."""
    from bench import cold_start, http_load, stdio_load

    py = sys.executable

    def have(names: Iterable[str], known: Iterable[str]) -> str:
        return ",".join(name for name in names if name in set(known))

    http = [
        py,
        "bench/http_load.py",
        "--servers",
        have(("ceiling", "wiremcp", "wiremcp-redis", "wiremcp-gateway", "ts-v1", "ts-v2"), http_load.SERVERS),
        "--methods",
        f"{CALL},{LIST}",
        "--json",
        str(out / "http.json"),
    ]
    cold = [
        py,
        "bench/cold_start.py",
        "--servers",
        have(("floor", "wiremcp", "ts-v1"), cold_start.SERVERS),
        "--importtime",
        "0",
        "--json",
        str(out / "cold.json"),
    ]
    stdio = [
        py,
        "bench/stdio_load.py",
        "--servers",
        have(("ceiling", "wiremcp", "wiremcp-async", "ts-v1"), stdio_load.SERVERS),
        "--json",
        str(out / "stdio.json"),
    ]
    workers = [py, "bench/workers.py", "--json", str(out / "workers.json")]
    if quick:
        short = ["--repeat", "1", "--duration", "1", "--warmup", "1", "--settle", "0", "--retries", "0"]
        http += short
        workers += short
        cold += ["--runs", "2", "--settle", "0", "--retries", "0"]
        stdio += ["--calls", "2000", "--warmup", "200"]
    else:
        http += ["--repeat", "3"]
        stdio += ["--repeat", "3"]
    return [("http", http), ("cold", cold), ("stdio", stdio), ("workers", workers)]


def run_all(out: Path, quick: bool) -> dict[str, int]:
    """Run the benchmarks one after the other (never side by side: they would measure each other); each
    writes its JSON into ``out`` (an old file is removed first, so that a failed step shows as not measured)."""
    out.mkdir(parents=True, exist_ok=True)
    codes = {}
    for name, argv in commands(out, quick):
        (out / f"{name}.json").unlink(missing_ok=True)
        print(f"\n$ {' '.join(argv)}", flush=True)
        codes[name] = subprocess.run(argv, cwd=ROOT, check=False).returncode
    return codes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--http", type=Path, help="http_load.py --json output")
    parser.add_argument("--cold", type=Path, help="cold_start.py --json output")
    parser.add_argument("--stdio", type=Path, help="stdio_load.py --json output")
    parser.add_argument("--workers", type=Path, help="workers.py --json output")
    parser.add_argument(
        "--markdown", action="store_true", help="print the table as Markdown (for the README)"
    )
    parser.add_argument(
        "--run",
        type=Path,
        metavar="DIR",
        help="first run http_load.py, cold_start.py, stdio_load.py and workers.py in sequence, writing "
        "DIR/{http,cold,stdio,workers}.json, then print the table from them (10-15 min on a quiet "
        "2-core VM, more while it is busy; --quick: a few minutes)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="with --run: 1 s runs, 2 cold starts, 2,000 stdio calls"
    )
    args = parser.parse_args(argv)
    codes: dict[str, int] = {}
    if args.run is not None:
        codes = run_all(args.run, args.quick)
        for name in ("http", "cold", "stdio", "workers"):
            if getattr(args, name) is None:
                setattr(args, name, args.run / f"{name}.json")
    elif args.quick:
        parser.error("--quick goes with --run")
    files = {
        name: (getattr(args, name), load(getattr(args, name)))
        for name in ("http", "cold", "stdio", "workers")
    }
    rows = table(*(data for _, data in files.values()))
    inputs = inputs_lines(files)
    inputs += [f"{name}: the run exited with {code}" for name, code in codes.items() if code]
    print()
    (print_markdown if args.markdown else print_text)(rows, machine_line(), inputs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
