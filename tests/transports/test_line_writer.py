"""``wiremcp.transports.line_writer``: messages onto the stdout wire as lines, in order."""

from __future__ import annotations

import asyncio
import os
import tempfile

import orjson

from wiremcp.transports.line_writer import QUEUE_SIZE, LineWriter, is_stream


def test_pipes_are_streams_and_regular_files_are_not() -> None:
    read, write = os.pipe()
    try:
        assert is_stream(read)
        assert is_stream(write)
    finally:
        os.close(read)
        os.close(write)
    with tempfile.TemporaryFile() as regular:
        assert not is_stream(regular.fileno())


async def _written(fd: int, messages: list[object]) -> None:
    writer = LineWriter(fd)
    await writer.start()
    running = asyncio.ensure_future(writer.run())
    for message in messages:
        if isinstance(message, dict) and message.get("posted"):
            writer.post(message)
        else:
            await writer.write(message)  # type: ignore[arg-type]
    await writer.close()
    await running


async def test_messages_go_out_one_line_each_in_order_through_a_pipe() -> None:
    read, write = os.pipe()
    try:
        messages: list[object] = [{"jsonrpc": "2.0", "id": i, "result": {}} for i in range(3)]
        messages.append([{"jsonrpc": "2.0", "id": 9, "result": {}}])  # a batch's answer: one line
        messages.append({"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "posted": True})
        await _written(write, messages)
        lines = os.read(read, 1 << 16).splitlines()
    finally:
        os.close(read)
        os.close(write)
    assert [orjson.loads(line) for line in lines] == messages


async def test_a_regular_file_is_written_with_blocking_calls_off_the_loop() -> None:
    with tempfile.TemporaryFile() as out:
        await _written(out.fileno(), [{"jsonrpc": "2.0", "id": 1, "result": {}}])
        out.seek(0)
        assert out.read() == b'{"jsonrpc":"2.0","id":1,"result":{}}\n'


async def test_posts_past_the_queue_are_dropped_and_what_comes_after_close_too() -> None:
    with tempfile.TemporaryFile() as out:
        writer = LineWriter(out.fileno())
        await writer.start()
        for i in range(QUEUE_SIZE + 5):
            writer.post({"jsonrpc": "2.0", "method": "notifications/message", "params": {"n": i}})
        await writer.close()
        writer.post({"jsonrpc": "2.0", "method": "late"})
        await writer.run()
        out.seek(0)
        assert len(out.read().splitlines()) == QUEUE_SIZE
