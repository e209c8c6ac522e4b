"""The command line run in this process, through ``wiremcp.transports.serving.cli.main``, as a process would run it: its own
environment and working directory, its output captured, its exit status returned; everything it changed
in this process (environment, working directory, module search path, the user's modules it imported) undone
after."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from wiremcp.transports.serving.cli import main


def run_main(args: list[str], cwd: Path, env: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    """``wiremcp ARGS`` with exactly ``env`` as its environment."""
    saved_env, saved_path, saved_modules, saved_cwd = dict(os.environ), list(sys.path), set(sys.modules), os.getcwd()
    out, err = io.StringIO(), io.StringIO()
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(args)
            except SystemExit as exit:
                code = exit.code if isinstance(exit.code, int) else 1
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        added = [Path(entry).resolve() for entry in sys.path if entry and entry not in saved_path]
        sys.path[:] = saved_path
        for name in set(sys.modules) - saved_modules:
            if _from(sys.modules[name], [cwd.resolve(), *added]):
                del sys.modules[name]
    return subprocess.CompletedProcess(["wiremcp", *args], code, out.getvalue(), err.getvalue())


def _from(module: object, roots: list[Path]) -> bool:
    """Whether ``module`` was loaded from under one of ``roots`` (the user's project: the working directory, the
    folders the command put on the module search path). Those are forgotten after the run, so that the next
    run imports the user's files afresh; a library imported for the first time during the run (httpcore, say)
    stays: forgetting it would leave the libraries that hold its classes (httpx) with classes no new import
    raises again."""
    file = getattr(module, "__file__", None)
    if not file:
        return False
    path = Path(file).resolve()
    installed = {Path(prefix).resolve() for prefix in (sys.prefix, sys.base_prefix)}  # a venv inside the project
    return any(path.is_relative_to(root) for root in roots) and not any(path.is_relative_to(p) for p in installed)
