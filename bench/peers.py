"""Peers that cannot share the project's venv: each gets its own venv under ``bench/.peers/`` (git-ignored),
made on demand the first time a benchmark needs it and reused afterwards.

    .venv/bin/python bench/peers.py            # make (or check) every peer venv and print its python

* ``fastmcp``: FastMCP ``4.1.6`` (``pip install fastmcp==4.1.6``) and what it needs. Its server runs
  ``bench/fastmcp_server.py`` with that venv's python; nothing of wiremcp is imported there.

When ``pip install fastmcp==4.1.6`` fails because a requirement's minimum version is not on the index
(FastMCP 4.1.6 asks for ``certifi>=2026.10.19``, a CA bundle, which the package index reachable here did not
have on 2026-11-22), the venv is made in two steps instead: ``fastmcp`` and ``fastmcp-slim`` without their
dependencies, then ``fastmcp-slim``'s ``client`` and ``server`` requirements as its metadata lists them, with
the lower bound dropped for the packages in ``RELAXED`` only. What was installed is written to
``<venv>/peer-freeze.txt`` (``pip freeze``) and printed by ``describe``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import venv
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


def main() -> int:
    try:
        python = fastmcp_python()
    except PeerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(python)
    print(describe(python))
    return 0


if __name__ == "__main__":
    sys.exit(main())
