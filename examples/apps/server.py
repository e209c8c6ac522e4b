"""MCP Apps (SEP-1865): a tool with an interactive view. A host that supports apps renders ``show_counter``'s
result in ``counter.html`` (a sandboxed iframe) and lets the view call ``increment``, a tool only the view
sees; any other host shows the text.

    wiremcp stdio examples/apps/server.py
    wiremcp http examples/apps/server.py
"""

from pathlib import Path

from wiremcp import Context, MCPServer

server = MCPServer("counter-app", instructions="show_counter shows a counter the user can click.")
server.app("ui://counter/view.html", file=Path(__file__).with_name("counter.html"), name="counter",
           description="A counter with a button", prefers_border=True)

_count = 0


@server.tool(ui="ui://counter/view.html")
async def show_counter(ctx: Context) -> dict[str, int]:
    """Show the counter (hosts with MCP Apps render it with a button; others get the number as text)."""
    return {"count": _count}


@server.tool(ui="ui://counter/view.html", visibility=["app"])
async def increment(by: int = 1) -> dict[str, int]:
    """Add ``by`` to the counter (called by the view's button; the model does not see this tool)."""
    global _count
    _count += by
    return {"count": _count}
