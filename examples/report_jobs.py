"""Tools that run for minutes, as tasks the client polls: one definition for both protocol eras.

    wiremcp http examples.report_jobs:server

- ``build_report`` may run as a task (``task_support="optional"``): a client that supports tasks gets
  the task at once and polls it; any other client just waits for the answer. It reports progress (on the
  2025-11-25 ``tasks/result`` stream) and stops where it awaits when the task is cancelled.
- ``publish_report`` must run as a task, but first asks the user to confirm while the client waits
  (``task_start="handler"``): the task starts when the handler calls ``ctx.start_task()``.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, TypedDict

from pydantic import BaseModel, Field

from wiremcp import Context, MCPServer, ToolError

server = MCPServer("report_jobs", "1.0.0", title="Report jobs")

SECONDS_PER_PAGE = 0.05


class Report(TypedDict):
    topic: str
    pages: int
    summary: str


class Confirm(BaseModel):
    publish: bool = Field(description="Publish the report now?")


@server.tool(task_support="optional")
async def build_report(topic: Annotated[str, Field(min_length=1)],
                       pages: Annotated[int, Field(ge=1, le=500)], ctx: Context) -> Report:
    """Write a report of ``pages`` pages on ``topic`` (a while per page)."""
    for page in range(1, pages + 1):
        await asyncio.sleep(SECONDS_PER_PAGE)  # the real work; a cancelled task stops here
        await ctx.report_progress(page, pages, f"page {page} of {pages}")
    return {"topic": topic, "pages": pages, "summary": f"{pages} pages on {topic}"}


@server.tool(task_support="required", task_start="handler")
async def publish_report(topic: Annotated[str, Field(min_length=1)], ctx: Context) -> str:
    """Ask the user to confirm, then publish in the background."""
    answer = await ctx.elicit(f"Publish the report on {topic}?", Confirm)
    if not (answer.accepted and answer.data and answer.data.publish):
        raise ToolError(f"Publishing {topic} was not confirmed")
    await ctx.start_task()  # the client gets the task now; the rest runs while it polls
    await asyncio.sleep(SECONDS_PER_PAGE)
    return f"Published the report on {topic} (task {ctx.task_id})."
