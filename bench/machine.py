"""The machine the benchmarks run on: is anything else using the CPUs?"""

from __future__ import annotations

import contextlib
import os
import time


def _cpu_times() -> tuple[int, int]:
    """(busy, total) jiffies over all CPUs, from /proc/stat."""
    with open("/proc/stat") as stat:
        fields = [int(v) for v in stat.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    total = sum(fields[:8])  # guest time is already counted in user
    return total - idle, total


def busy_cpu_seconds() -> float:
    """CPU seconds all CPUs together have been busy since boot (0.0 where /proc/stat is missing)."""
    try:
        busy, _ = _cpu_times()
    except (OSError, ValueError, IndexError):
        return 0.0
    return busy / os.sysconf("SC_CLK_TCK")


def busy_fraction(seconds: float = 1.0) -> float | None:
    """How busy all CPUs were together over ``seconds`` (0..1); None where /proc/stat is missing."""
    try:
        busy0, total0 = _cpu_times()
        time.sleep(seconds)
        busy1, total1 = _cpu_times()
    except (OSError, ValueError, IndexError):
        return None
    return (busy1 - busy0) / (total1 - total0) if total1 > total0 else 0.0


def wait_quiet(limit: float = 0.05, timeout: float = 60.0, interval: float = 0.5) -> bool:
    """Wait (up to ``timeout`` seconds) until all CPUs together are at most ``limit`` busy over ``interval``;
    whether they were. Call it while nothing of the benchmark's own is running."""
    deadline = time.monotonic() + timeout
    while True:
        busy = busy_fraction(interval)
        if busy is None or busy <= limit:
            return True
        if time.monotonic() >= deadline:
            return False


def warn_if_busy(limit: float = 0.05) -> None:
    """Other work on the machine skews every number: say so before starting."""
    busy = busy_fraction()
    if busy is not None and busy > limit:
        print(f"WARNING: the CPUs were {busy:.0%} busy just before starting; other processes compete "
              "for them and the numbers will be noisy", flush=True)


def machine_line() -> str:
    """What the README's results quote as "the machine": CPUs, kernel, memory, Python and the packages measured."""
    import importlib.metadata
    import platform
    import shutil
    import subprocess

    model = "?"
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as cpuinfo:
        model = next((line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")), "?")
    memory = ""
    with contextlib.suppress(OSError, ValueError, IndexError), open("/proc/meminfo") as meminfo:
        memory = f", {int(meminfo.readline().split()[1]) / 2**20:.0f} GiB"

    def version(name: str) -> str:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            return "not installed"

    packages = ", ".join(f"{name} {version(name)}" for name in
                         ("uvicorn", "h11", "httptools", "uvloop", "starlette", "orjson", "pydantic", "mcp", "redis"))
    wrk = "not installed"
    if shutil.which("wrk"):
        out = subprocess.run(["wrk", "--version"], capture_output=True, text=True, timeout=10)
        wrk = (out.stdout or out.stderr).split(" [")[0].replace("wrk ", "")
    return (f"{os.cpu_count()} vCPU ({model}){memory}, {platform.system()} {platform.release()}, "
            f"Python {platform.python_version()}, {packages}, wrk {wrk}")


if __name__ == "__main__":
    print(machine_line())
