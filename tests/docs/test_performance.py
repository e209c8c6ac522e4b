"""``docs/performance.md``: the commands it gives are the benchmarks' real command lines (their options exist),
and the servers it names are ones the harness knows. The benchmarks themselves are not run by the tests."""

from __future__ import annotations

import shlex
import subprocess
import sys

import pytest

from tests.support.docs_pages import DOCS, ROOT, block

PAGE = DOCS / "performance.md"
CHECKED = {"bench-targets", "bench-http"}


@pytest.mark.parametrize("name", sorted(CHECKED))
def test_the_command_parses_with_the_scripts_own_options(name: str) -> None:
    """The command, its program replaced by this interpreter and ``--help`` added: the script's parser accepts
    every option the page gives (argparse exits 2 on one it does not know, before printing the help)."""
    (line,) = block(PAGE, name).text.splitlines()
    program, script, *arguments = shlex.split(line)
    assert program == ".venv/bin/python"
    done = subprocess.run([sys.executable, script, *arguments, "--help"], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    if "--servers" in arguments:
        servers = arguments[arguments.index("--servers") + 1].split(",")
        assert all(server in done.stdout.replace("\n", "").replace(" ", "") for server in servers), servers
