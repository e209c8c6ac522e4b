"""``docs/hosts.md``, run: the command lines are the parser's, the list/call transcripts are what they print (on a
spec and on a real server's URL), and the host entries are what ``wiremcp install`` prints and writes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.support.docs_pages import BIN, DOCS, ROOT, accepting, background, block, sh
from tests.support.http import free_port

pytestmark = pytest.mark.timeout(120)

PAGE = DOCS / "hosts.md"
CHECKED = {"commands", "list-call", "list-url", "host-entry", "claude-desktop-config", "vscode-config"}


def test_the_commands_are_the_command_lines() -> None:
    from wiremcp.transports.serving.cli import parser

    (commands,) = [action.choices for action in parser()._actions if action.dest == "command"]
    listed = [line.split()[1] for line in block(PAGE, "commands").text.splitlines()]
    assert sorted(listed) == sorted(commands or ())


def _transcript(text: str) -> list[tuple[str, str]]:
    """Each ``$ command`` line of a transcript, with the lines that follow it."""
    return re.findall(r"^\$ (.+)\n((?:(?!\$ ).*\n)*)", text, flags=re.M)


def test_the_list_and_call_transcript_is_what_they_print() -> None:
    """Each ``$ command`` line of the block, run, prints the lines that follow it."""
    for command, expected in _transcript(block(PAGE, "list-call").text):
        done = sh(command)
        assert done.returncode == 0, done.stderr
        assert done.stdout == expected, command


def test_call_on_a_url_prints_what_the_page_says() -> None:
    """The URL transcript, against ``wiremcp http examples/word_count.py`` on a free port."""
    port = free_port()
    with background(f"wiremcp http examples/word_count.py --port {port}") as process:
        accepting(process, port)
        for command, expected in _transcript(block(PAGE, "list-url").text):
            done = sh(command.replace("8000", str(port)))
            assert done.returncode == 0, done.stderr
            assert done.stdout == expected, command


def _with_page_paths(text: str) -> str:
    """What ``wiremcp install`` wrote or printed, with this machine's paths as the page shows them."""
    python = re.escape(str(BIN)) + r"/python[0-9.]*"
    return re.sub(python, "/home/you/project/.venv/bin/python", text).replace(str(ROOT), "/home/you/project")


def test_the_host_entry_is_what_install_json_prints() -> None:
    printed = sh("wiremcp install json examples/word_count.py")
    assert printed.returncode == 0, printed.stderr
    assert _with_page_paths(printed.stdout) == block(PAGE, "host-entry").text


@pytest.mark.parametrize(("host", "name"), [("claude-desktop", "claude-desktop-config"), ("vscode", "vscode-config")])
def test_the_host_configurations_are_what_install_writes(host: str, name: str, tmp_path: Path) -> None:
    written = sh(f"wiremcp install {host} examples/word_count.py --config {tmp_path / 'config.json'}")
    assert written.returncode == 0, written.stderr
    assert json.loads(_with_page_paths((tmp_path / "config.json").read_text())) == json.loads(block(PAGE, name).text)


def test_the_table_of_hosts_is_what_install_knows() -> None:
    """Every host ``wiremcp install`` takes is a row of the page's table, with the key its entries go under."""
    from wiremcp.transports.serving.cli.hosts import HOSTS, PRINT_ONLY

    text = PAGE.read_text()
    for name, host in HOSTS.items():
        (row,) = [line for line in text.splitlines() if line.startswith(f"| `{name}` |")]
        assert f"| {host.label} |" in row
        assert f"`{host.key}`" in row
        assert ('"type": "stdio"' in row) == host.typed
    assert f"| `{PRINT_ONLY}` |" in text
