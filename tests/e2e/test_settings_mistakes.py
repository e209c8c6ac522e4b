"""A user's mistake in a setting, as they would make it, on a real process of each way of serving.

An invalid value (a path without its leading ``/``, a negative or zero duration, size or count where that
means nothing) ends ``wiremcp http``, ``wiremcp stdio``, ``uvicorn wiremcp:asgi`` and ``uvicorn app:asgi``
with one line naming the variable, the value and what is expected, and exit status 2. A misspelt variable
is not silently ignored: one warning line names the setting it probably meant, and serving goes on.
"""

from __future__ import annotations

import os
import subprocess
import sys

import httpx
import pytest

from tests.support.http import READ_BOUND, ROOT, START_BOUND, free_port, initialize, run_uvicorn

pytestmark = pytest.mark.timeout(60)

SERVER = "tests.support.settings_server:server"


def serving(form: str) -> list[str]:
    """The command line of one way of serving (the server named by ``WIREMCP_SERVER``)."""
    port = str(free_port())
    return {
        "wiremcp http": [sys.executable, "-m", "wiremcp", "http", "--port", port],
        "wiremcp stdio": [sys.executable, "-m", "wiremcp", "stdio"],
        "uvicorn wiremcp:asgi": [sys.executable, "-m", "uvicorn", "wiremcp:asgi", "--port", port],
        "uvicorn app:asgi": [sys.executable, "-m", "uvicorn", "app:asgi", "--port", port],
    }[form]


def started(form: str, **settings: str) -> subprocess.CompletedProcess[str]:
    """``form`` run to its end in the repository, with ``settings`` as its only ``WIREMCP_*`` variables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("WIREMCP_")}
    env.update({"WIREMCP_SERVER": SERVER, "PYTHONDONTWRITEBYTECODE": "1", **settings})
    return subprocess.run(serving(form), cwd=ROOT, env=env, capture_output=True, text=True, timeout=START_BOUND,
                          stdin=subprocess.DEVNULL)


FORMS = ["wiremcp http", "wiremcp stdio", "uvicorn wiremcp:asgi", "uvicorn app:asgi"]
BAD_VALUES = [
    ("WIREMCP_PATH", "mcp", "a URL path starting with /, such as /mcp"),
    ("WIREMCP_SESSION_IDLE_SECONDS", "-5", "a number of seconds, more than 0"),
    ("WIREMCP_DRAIN_SECONDS", "-1", "a number of seconds, 0 or more"),
    ("WIREMCP_DRAIN_SETTLE_SECONDS", "soon", "a number of seconds, 0 or more"),
    ("WIREMCP_MAX_MESSAGE_BYTES", "0", "an integer, more than 0"),
    ("WIREMCP_MAX_SESSIONS", "-10", "an integer, more than 0"),
]


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize(("name", "value", "expected"), BAD_VALUES, ids=[f"{n}={v}" for n, v, _ in BAD_VALUES])
def test_an_invalid_value_is_one_line_and_exit_2(form: str, name: str, value: str, expected: str) -> None:
    done = started(form, **{name: value})
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert done.stderr == f"wiremcp: error: {name} must be {expected}, got {value!r}\n", done.stderr
    assert done.stdout == ""


@pytest.mark.parametrize("form", ["wiremcp stdio", "uvicorn app:asgi"])
def test_a_misspelt_variable_is_one_warning_naming_the_setting_it_meant(form: str) -> None:
    """Stdio (stdin closed at once: the server ends) and HTTP (served, then stopped) alike."""
    misspelt = {"WIREMCP_SESION_IDLE_SECONDS": "5"}
    line = ("WARNING wiremcp: WIREMCP_SESION_IDLE_SECONDS is not a wiremcp setting and is ignored: "
            "did you mean WIREMCP_SESSION_IDLE_SECONDS?")
    if form == "wiremcp stdio":
        done = started(form, WIREMCP_LOG_LEVEL="WARNING", **misspelt)
        assert done.returncode == 0, done.stderr
        warnings = [entry for entry in done.stderr.splitlines() if "WIREMCP_SESION" in entry]
    else:
        with run_uvicorn(SERVER, misspelt) as process:
            with httpx.Client(timeout=READ_BOUND) as http:
                assert http.get(process.base_url + "/healthz").status_code == 200  # serving goes on
            output = process.stop_and_wait()
        warnings = [entry for entry in output.splitlines() if "WIREMCP_SESION" in entry]
    assert len(warnings) == 1, warnings
    assert warnings[0].endswith(line), warnings


@pytest.mark.setting("WIREMCP_PATH")
async def test_a_path_with_its_slash_is_served_and_warns_of_nothing() -> None:
    """The valid spelling of what the invalid one meant: served there, and no warning for any variable."""
    with run_uvicorn(SERVER, {"WIREMCP_PATH": "/rpc"}) as process:
        async with httpx.AsyncClient(timeout=READ_BOUND) as http:
            await initialize(http, process.base_url + "/rpc")
        output = process.stop_and_wait()
    assert "is not a wiremcp setting" not in output, output
