"""A user's own project beside ours: files written as the user would save them, and pytest run there as the user
would run it, with none of this repository's pytest options (``PYTEST_ADDOPTS``, which ``.ci/run`` sets, would
hand it options only our ``conftest`` knows)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

RUN_BOUND = 60.0


def run_pytest(project: Path, files: Mapping[str, str], env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``files`` (name -> text) written into ``project``, then ``python -m pytest -q -W error`` run there: the
    user's tests, with every warning an error."""
    for name, text in files.items():
        (project / name).write_text(text)
    clean = {name: value for name, value in (env or os.environ).items() if name != "PYTEST_ADDOPTS"}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W", "error", str(project)],
                          cwd=project, env=clean, capture_output=True, text=True, timeout=RUN_BOUND)
