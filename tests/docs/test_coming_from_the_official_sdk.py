"""``docs/coming-from-the-official-sdk.md``, run."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.support.docs_pages import DOCS, answered_on_a_free_port, block, exec_as_file, notifications
from wiremcp import MCPError
from wiremcp.transports import Client

pytestmark = pytest.mark.timeout(120)

PAGE = DOCS / "coming-from-the-official-sdk.md"
CHECKED = {"sdk-server"}



def test_python_server_py_serves_streamable_http_as_the_block_says(tmp_path: Path) -> None:
    text = block(PAGE, "sdk-server").text
    run_line = 'server.run(transport="streamable-http")'
    assert run_line in text

    def saved_on(port: int) -> list[str]:
        (tmp_path / "server.py").write_text(text.replace(run_line, run_line[:-1] + f", port={port})"))
        return [sys.executable, "server.py"]

    result = answered_on_a_free_port(saved_on, tmp_path, "add_note", {"name": "n", "text": "t"})
    assert result["result"]["content"][0]["text"] == "saved n", result

async def test_the_official_sdk_server_logs_reads_prompts_and_completes(tmp_path: Path) -> None:
    server = exec_as_file(PAGE, "sdk-server", tmp_path / "server.py")["server"]
    async with Client(server) as client:
        saved = await client.call_tool("add_note", {"name": "call", "text": "ring Bo"}, progress_token=1)
        note = await client.read_resource("notes://call")
        with pytest.raises(MCPError) as unknown:
            await client.read_resource("notes://nothing")
        prompt = await client.get_prompt("summarize", {"name": "todo"})
        completed = await client.complete({"type": "ref/prompt", "name": "summarize"}, "name", "t")
    assert saved["content"][0]["text"] == "saved call"
    assert notifications(client, "notifications/message") == [{"level": "info", "data": "saving call", "logger": "notes"}]
    assert [p["progress"] for p in notifications(client, "notifications/progress")] == [1]
    assert note["contents"][0]["text"] == "ring Bo"
    assert unknown.value.code == -32002
    assert [m["role"] for m in prompt["messages"]] == ["user", "assistant"]
    assert completed["completion"]["values"] == ["todo"]
