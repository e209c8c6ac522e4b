"""The command line run in this process, through ``wiremcp.transports.serving.cli.main``, as a process would run it: its own
environment and working directory, its output captured, its exit status returned; everything it changed
in this process (environment, working directory, module search path, imported modules) undone after."""

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
        sys.path[:] = saved_path
        for name in set(sys.modules) - saved_modules:
            del sys.modules[name]
    return subprocess.CompletedProcess(["wiremcp", *args], code, out.getvalue(), err.getvalue())
