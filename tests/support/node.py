"""Node.js for the tests that run an npm package: the official conformance suite (``tests/e2e/test_conformance.py``)
and ``mcp-remote`` (``tests/e2e/test_oauth_mcp_remote.py``), each through ``npx``.

They need Node >= 22.19. A Node on PATH that is new enough is used; otherwise one is installed once from the npm
registry (the ``node-linux-<arch>@22`` package) into a cache directory (``WIREMCP_NODE_CACHE``, by default
``~/.cache/wiremcp/node22``). Without npm the tests are skipped, or fail under ``--require-parts``
(``tests/support/parts.py``).

    bin_dir = node_bin("the conformance suite")
    subprocess.run([*npx(bin_dir), "-y", "some-package@1.2.3", ...], env=node_env(bin_dir), ...)
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
from pathlib import Path

from tests.support.parts import missing

CACHE = Path(os.environ.get("WIREMCP_NODE_CACHE", Path.home() / ".cache" / "wiremcp" / "node22"))
"""Where a Node installed from the npm registry is kept between runs."""
MIN_NODE = (22, 19)
INSTALL_BOUND = 600
"""Seconds; a failure bound for installing Node from the npm registry."""


def _node_version(node: str) -> tuple[int, ...] | None:
    try:
        out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    found = re.match(r"v(\d+)\.(\d+)", out.strip())
    return (int(found.group(1)), int(found.group(2))) if found else None


def find_node_bin() -> Path | None:
    """The folder of a Node >= 22.19: the one on PATH if new enough, else the cached one (installed with npm
    first if need be); None without one and without npm to install it."""
    on_path = shutil.which("node")
    if on_path and (_node_version(on_path) or (0,)) >= MIN_NODE:
        return Path(on_path).parent
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(platform.machine().lower())
    if arch is None:
        return None
    cached = CACHE / "node_modules" / f"node-linux-{arch}" / "bin"
    if not (cached / "node").exists():
        npm = shutil.which("npm")
        if npm is None:
            return None
        CACHE.mkdir(parents=True, exist_ok=True)
        subprocess.run([npm, "install", "--silent", "--no-audit", "--no-fund", "--prefix", str(CACHE),
                        f"node-linux-{arch}@22"], check=True, timeout=INSTALL_BOUND)
    return cached if (_node_version(str(cached / "node")) or (0,)) >= MIN_NODE else None


def node_bin(needed_for: str) -> Path:
    """The folder of a Node >= 22.19 with an ``npx`` to run it with; else the test is skipped (failed under
    ``--require-parts``), saying it was ``needed_for`` what."""
    found = find_node_bin()
    if found is None:
        missing(f"no Node >= 22.19 on PATH and no npm to install it for {needed_for} (Debian: apt-get install npm)")
    if not (found / "npx").exists() and shutil.which("npx") is None:  # a cached Node brings no npx of its own
        missing(f"no npx on PATH to run {needed_for} with (Debian: apt-get install npm)")
    return found


def npx(bin_dir: Path) -> str:
    """The ``npx`` to run a package with: the Node's own, else the one on PATH (run with :func:`node_env`, it
    uses the Node of ``bin_dir``)."""
    own = bin_dir / "npx"
    return str(own) if own.exists() else "npx"


def node_env(bin_dir: Path, environ: dict[str, str] | None = None) -> dict[str, str]:
    """``environ`` (by default this process's environment) with ``bin_dir`` first on PATH."""
    base = dict(os.environ if environ is None else environ)
    return {**base, "PATH": f"{bin_dir}{os.pathsep}{base.get('PATH', '')}"}
