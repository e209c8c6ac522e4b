"""``docs/reference/settings.md``: what a mistake in a setting prints is what the page shows (the table itself is
generated from the code; ``tests/docs/test_site.py`` checks it lists every setting)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.docs_pages import DOCS, ENV, block
from tests.support.http import START_BOUND, free_port, stop_process

pytestmark = pytest.mark.timeout(60)

PAGE = DOCS / "reference" / "settings.md"
CHECKED = {"refused", "misspelt"}


def test_a_value_that_means_nothing_is_the_pages_one_line_and_exit_2(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "wiremcp", "http", "examples.word_count:server"], cwd=DOCS.parent,
                          env={**ENV, "WIREMCP_SESSION_IDLE_SECONDS": "-5"}, capture_output=True, text=True,
                          timeout=START_BOUND)
    assert (done.returncode, done.stderr) == (2, block(PAGE, "refused").text)


def test_a_misspelt_setting_is_the_pages_warning_and_serving_goes_on() -> None:
    """Served over HTTP: the warning is on stderr before it serves, and the process goes on serving."""
    expected = block(PAGE, "misspelt").text.strip().removeprefix("... ")
    process = subprocess.Popen([sys.executable, "-m", "wiremcp", "http", "examples.word_count:server", "--port",
                                str(free_port())], cwd=DOCS.parent, env={**ENV, "WIREMCP_SESION_IDLE_SECONDS": "5",
                                                                        "WIREMCP_LOG_LEVEL": "INFO"},
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stderr is not None
        for line in process.stderr:  # bounded by the module's timeout; the warning comes before serving
            if "WIREMCP_SESION" in line:
                assert line.rstrip("\n").endswith(expected), line
                break
        else:
            pytest.fail("no warning before the process ended")
        assert process.poll() is None, "serving goes on"
    finally:
        stop_process(process)  # type: ignore[arg-type]
