"""``wiremcp list`` and ``wiremcp call`` against a server spec they launch on stdio and against real
``uvicorn app:asgi`` servers (one each per module: ``examples/everything.py``, and
``examples/word_count.py`` behind static bearer tokens). The command line runs in this process, through
``main``, except where only a process of its own shows the behaviour.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from examples.everything import PNG
from tests.support.command_line import run_main
from tests.support.http import UvicornProcess, refusing_port, run_uvicorn
from wiremcp.transports.serving.cli import main
from wiremcp.transports.serving.cli.inspect import coerce
from wiremcp.transports.serving.settings import ConfigError

ROOT = Path(__file__).resolve().parents[4]
EVERYTHING = "examples.everything:server"
WORD_COUNT = "examples.word_count:server"
TOKEN = "cli-token-5e1d"
AUTH_ENV = {"WIREMCP_AUTH_RESOURCE": "http://127.0.0.1/mcp", "WIREMCP_AUTH_ISSUER": "https://issuer.test",
            "WIREMCP_AUTH_STATIC_TOKENS": f"{TOKEN}=alice"}
BEARER = f"Authorization: Bearer {TOKEN}"
BOUND = 30.0
"""Failure bound for one command."""
ENV = {**{k: v for k, v in os.environ.items() if not k.startswith("WIREMCP_")},
       "WIREMCP_LOG_LEVEL": "WARNING", "PYTHONDONTWRITEBYTECODE": "1"}


@pytest.fixture(scope="module")
def everything() -> Iterator[UvicornProcess]:
    with run_uvicorn(EVERYTHING) as process:
        yield process
        assert "Traceback" not in process.output(), process.output()


@pytest.fixture(scope="module")
def guarded() -> Iterator[UvicornProcess]:
    """The word count server, answering only requests with the bearer token."""
    with run_uvicorn(WORD_COUNT, AUTH_ENV) as process:
        yield process
        assert "Traceback" not in process.output(), process.output()


def wiremcp(*args: str, cwd: Path = ROOT, process: bool = False) -> subprocess.CompletedProcess[str]:
    """``wiremcp ARGS``: by the command line's ``main`` in this process (a process each would cost the suite
    seconds; a spec target is launched as a process either way), or with ``process`` as its own process,
    for what only a process shows (the stderr of the server it launches)."""
    if process:
        done = subprocess.run([sys.executable, "-m", "wiremcp", *args], cwd=cwd, env=ENV, capture_output=True,
                              text=True, timeout=BOUND)
    else:
        done = run_main(list(args), cwd, ENV)
    assert "Traceback" not in done.stderr, done.stderr
    return done




def succeeded(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, (done.returncode, done.stderr)
    return done.stdout


def one_line(done: subprocess.CompletedProcess[str], status: int) -> str:
    """The single stderr line of a command that failed with ``status``."""
    assert done.returncode == status, (done.returncode, done.stdout, done.stderr)
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.endswith("\n"), done.stderr
    return done.stderr


# -- list ---------------------------------------------------------------------------------------------
def check_listing(listing: dict[str, Any], era: str) -> None:
    """``--json``: the listed objects as the server sent them."""
    assert listing["protocolVersion"] == era
    assert listing["serverInfo"]["name"] == "wiremcp-everything"
    tools = {tool["name"]: tool for tool in listing["tools"]}
    assert {"greet", "slow_compute", "test_simple_text", "json_schema_2020_12_tool"} <= tools.keys()
    assert tools["greet"]["inputSchema"]["properties"]["name"]["type"] == "string"
    assert tools["greet"]["inputSchema"]["required"] == ["name"]
    assert {r["uri"] for r in listing["resources"]} == {"test://static-text", "test://static-binary",
                                                       "test://watched-resource", "skill://pdf-processing/SKILL.md",
                                                       "skill://acme/billing/refunds/SKILL.md"}
    assert [t["uriTemplate"] for t in listing["resourceTemplates"]] == ["test://template/{id}/data"]
    assert {"test_simple_prompt", "test_prompt_with_arguments"} <= {p["name"] for p in listing["prompts"]}


def check_listing_text(out: str, era: str) -> None:
    """The human listing: a header line, then one section per kind the server offers."""
    assert out.startswith(f"wiremcp-everything 1.0.0 (wiremcp everything), protocol {era}\n\nTools:\n"), out
    assert "\n  greet — An ordinary tool: never a task.\n      name: string, required\n" in out
    assert ("\n  slow_compute — Work for ``seconds`` seconds, as a task when the client supports tasks; "
            "cancellable.\n      seconds: number, required\n      label: string\n") in out
    assert "\nResources:\n" in out
    assert "\n  test://static-text  static-text (text/plain) — A fixed text resource.\n" in out
    assert ("\nResource templates:\n  test://template/{id}/data  template-data (application/json) — "
            "Data for any id, from a URI template.\n") in out
    assert ("\n  test_prompt_with_arguments — A prompt with two required arguments.\n"
            "      arg1, required — The first argument\n      arg2, required — The second argument\n") in out


@pytest.mark.parametrize(("protocol", "as_json", "era"), [
    ("2025-11-25", False, "2025-11-25"),
    ("auto", True, "2026-07-28"),
])
def test_list_over_stdio(protocol: str, as_json: bool, era: str) -> None:
    out = succeeded(wiremcp("list", EVERYTHING, "--protocol", protocol, *(["--json"] if as_json else [])))
    if as_json:
        check_listing(json.loads(out), era)
    else:
        check_listing_text(out, era)


@pytest.mark.parametrize(("protocol", "as_json", "era"), [
    ("2025-11-25", True, "2025-11-25"),
    ("2026-07-28", False, "2026-07-28"),
    ("auto", True, "2026-07-28"),
])
def test_list_over_http(everything: UvicornProcess, protocol: str, as_json: bool, era: str) -> None:
    out = succeeded(wiremcp("list", everything.url, "--protocol", protocol, *(["--json"] if as_json else [])))
    if as_json:
        check_listing(json.loads(out), era)
    else:
        check_listing_text(out, era)


def test_list_skips_what_the_server_does_not_offer(guarded: UvicornProcess) -> None:
    out = succeeded(wiremcp("list", guarded.url, "--header", BEARER))
    assert out == ("word_count 1.0.0 (Word count), protocol 2026-07-28\n\nTools:\n"
                   "  word_count — Count the words and characters in a text.\n      text: string, required\n")


def test_without_the_header_a_guarded_server_is_one_line_naming_the_option(guarded: UvicornProcess) -> None:
    line = one_line(wiremcp("list", guarded.url), 1)
    assert line.startswith(f"wiremcp: error: {guarded.url} refused the request (HTTP 401"), line
    assert "--header 'Authorization: Bearer TOKEN'" in line


# -- call -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("protocol", ["2025-11-25", "2026-07-28"])
def test_call_over_stdio_prints_the_structured_result(protocol: str) -> None:
    out = succeeded(wiremcp("call", WORD_COUNT, "word_count", "text=read the wire", "--protocol", protocol))
    assert json.loads(out) == {"words": 3, "chars": 13}


@pytest.mark.parametrize("protocol", ["2025-11-25", "2026-07-28"])
def test_call_over_http_with_the_header(guarded: UvicornProcess, protocol: str) -> None:
    out = succeeded(wiremcp("call", guarded.url, "word_count", "text=read the wire", "--protocol", protocol,
                            "--header", BEARER, "--json"))
    result = json.loads(out)  # --json: the whole result
    assert result["structuredContent"] == {"words": 3, "chars": 13}
    assert result["content"][0]["type"] == "text"


ADDER = '''
from wiremcp import MCPServer

server = MCPServer("adder", "1.0.0")


@server.tool()
def add(a: int, b: int, scale: float = 1.0, tag: str = "", flags: list[str] | None = None) -> str:
    return f"{tag}: {(a + b) * scale:g} {flags}"
'''


def test_call_types_integers_and_merges_args_json(tmp_path: Path) -> None:
    (tmp_path / "adder.py").write_text(ADDER)
    # integers and a number parsed; a string sent as written though it looks like JSON; b=2 over --args' b
    out = succeeded(wiremcp("call", "adder:server", "add", "b=2", "scale=1.5", "tag=7", "flags=[\"q\"]", "--args",
                            '{"a": 1, "b": 100}', "--app-dir", str(tmp_path)))
    assert out == "7: 4.5 ['q']\n"


def test_a_tool_error_is_its_text_on_stderr_and_status_1(everything: UvicornProcess) -> None:
    done = wiremcp("call", everything.url, "test_error_handling")
    assert one_line(done, 1) == "This tool intentionally returns an error for testing\n"
    assert done.stdout == ""


def test_an_unknown_tool_is_the_servers_message_and_status_1(everything: UvicornProcess) -> None:
    done = wiremcp("call", everything.url, "no_such_tool", "--protocol", "2025-11-25")
    assert one_line(done, 1) == "wiremcp: error: Unknown tool: no_such_tool (-32602)\n"


def test_an_argument_that_does_not_fit_its_type_is_one_line_and_status_2(everything: UvicornProcess) -> None:
    done = wiremcp("call", everything.url, "slow_compute", "seconds=soon")
    assert one_line(done, 2) == "wiremcp: error: argument 'seconds' must be number, not 'soon'\n"


# -- what cannot be reached ----------------------------------------------------------------------------
def test_a_refused_connection_is_one_line_and_status_1() -> None:
    with refusing_port() as port:
        url = f"http://127.0.0.1:{port}/mcp"
        assert one_line(wiremcp("list", url), 1) == f"wiremcp: error: cannot reach {url}: connection refused\n"


def test_a_spec_that_names_no_server_is_the_launched_servers_line_and_status_2() -> None:
    line = one_line(wiremcp("call", "no_such_module_x:server", "tool", process=True), 2)
    assert line.startswith("wiremcp: error: no module named 'no_such_module_x'"), line


# -- in this process, through main: output details, and mistakes found before anything is launched ----------
def test_call_summarises_blocks_that_are_not_text(everything: UvicornProcess,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["call", everything.url, "test_multiple_content_types"]) == 0
    assert capsys.readouterr().out == (f"Multiple content types test:\n[image image/png, {len(PNG)} bytes]\n"
                                       "[resource test://mixed-content-resource application/json]\n")


def test_call_types_a_number_and_keeps_a_string_as_written(everything: UvicornProcess,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["call", everything.url, "slow_compute", "seconds=0", "label=7", "--protocol", "2025-11-25"]) == 0
    assert capsys.readouterr().out == "Computed 7 in 0s.\n"
    # key=value pairs may follow the options too
    assert main(["call", everything.url, "slow_compute", "--protocol", "2025-11-25", "seconds=0", "label=8"]) == 0
    assert capsys.readouterr().out == "Computed 8 in 0s.\n"


@pytest.mark.spec("2026-07-28/basic/transports/streamable-http#custom-headers-from-tool-parameters")
def test_call_mirrors_an_x_mcp_header_argument(everything: UvicornProcess, capsys: pytest.CaptureFixture[str]) -> None:
    # the server refuses the call (-32020) unless Mcp-Param-Region carries the value, base64-encoded here
    assert main(["call", everything.url, "test_x_mcp_header", "region=Hello, 世界"]) == 0
    assert capsys.readouterr().out == "region=Hello, 世界\n"


@pytest.mark.spec("2026-07-28/basic/patterns/mrtr")
def test_a_tool_that_asks_for_input_is_status_1(everything: UvicornProcess, capsys: pytest.CaptureFixture[str]) -> None:
    # without client capabilities this tool answers input_required with a request state only
    assert main(["call", everything.url, "test_input_required_result_capabilities"]) == 1
    assert capsys.readouterr().err == ("wiremcp: error: the tool test_input_required_result_capabilities asks "
                                       "for input the command line cannot give\n")
    assert main(["call", everything.url, "test_input_required_result_capabilities", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["resultType"] == "input_required"  # --json: the result too


def test_a_timeout_below_the_answer_is_one_line(everything: UvicornProcess, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["call", everything.url, "slow_compute", "seconds=60", "--timeout", "0.5"]) == 1
    assert capsys.readouterr().err == "wiremcp: error: no answer to tools/call within 0.5 s\n"


@pytest.mark.parametrize(("argv", "message"), [
    (["call", "examples.word_count:server", "word_count", "text"], "'text' is not a key=value argument"),
    (["call", "examples.word_count:server", "word_count", "--args", "[1]"], "--args must be a JSON object"),
    (["call", "examples.word_count:server", "word_count", "--args", "{"], "--args must be a JSON object"),
    (["list", "examples.word_count:server", "--header", "A: b"], "--header applies only to a URL target"),
    (["list", "http://127.0.0.1:9/mcp", "--header", "no colon"], "is not 'Name: value'"),
    (["list", "http://127.0.0.1:9/mcp", "--timeout", "0"], "--timeout must be a positive number"),
])
def test_a_malformed_command_is_one_line_and_status_2(argv: list[str], message: str,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as ended:
        main(argv)
    assert ended.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("wiremcp: error: "), err
    assert err.count("\n") == 1, err
    assert message in err


SCHEMA = {"type": "object", "properties": {
    "s": {"type": "string"}, "i": {"type": "integer"}, "n": {"type": "number"}, "b": {"type": "boolean"},
    "o": {"type": "object"}, "a": {"type": "array"}, "z": {"type": "null"}, "si": {"type": ["integer", "string"]},
    "free": {"description": "no type"}}}


@pytest.mark.parametrize(("key", "raw", "value"), [
    ("s", "42", "42"), ("s", "", ""), ("s", '"q"', '"q"'),
    ("i", "42", 42), ("i", "-7", -7), ("i", "3.0", 3),
    ("n", "1.5", 1.5), ("n", "2", 2),
    ("b", "true", True), ("b", "false", False),
    ("o", '{"k": [1]}', {"k": [1]}), ("a", "[1, \"x\"]", [1, "x"]), ("z", "null", None),
    ("si", "5", 5), ("si", "five", "five"),
    ("free", "[1]", [1]), ("free", "word", "word"),
    ("unknown", "12", 12), ("unknown", "{not json", "{not json"),
])
def test_key_value_arguments_are_typed_by_the_schema(key: str, raw: str, value: Any) -> None:
    coerced = coerce(key, raw, SCHEMA)
    assert coerced == value
    assert type(coerced) is type(value)


@pytest.mark.parametrize(("key", "raw"), [("i", "4.5"), ("i", "true"), ("i", "x"), ("n", "\"1\""), ("b", "yes"),
                                          ("o", "[1]"), ("a", "{}"), ("z", "0")])
def test_a_value_that_does_not_fit_names_its_key(key: str, raw: str) -> None:
    with pytest.raises(ConfigError, match=f"argument '{key}' must be "):
        coerce(key, raw, SCHEMA)


ENUM_SERVER = '''import enum

from wiremcp import MCPServer

server = MCPServer("paints")


class Colour(enum.Enum):
    RED = "red"
    GREEN = "green"


class Size(enum.IntEnum):
    SMALL = 1
    LARGE = 2


@server.tool()
def paint(colour: Colour, size: Size = Size.SMALL, shade: Colour | None = None) -> str:
    return colour.value
'''


def test_list_shows_an_enum_parameter_by_its_values(tmp_path: Path) -> None:
    (tmp_path / "paints.py").write_text(ENUM_SERVER)
    listed = succeeded(wiremcp("list", "paints.py", cwd=tmp_path, process=True))
    assert "      colour: red|green, required\n      size: 1|2\n      shade: red|green|null\n" in listed, listed
