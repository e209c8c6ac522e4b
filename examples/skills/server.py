"""Agent Skills over MCP (SEP-2640): every skill folder under ``library/`` served as ``skill://`` resources,
listed by ``skills/list``, fetched by ``skills/get``, browsed with ``resources/directory/read``. Edit a file
while it runs and clients hear ``notifications/resources/list_changed``.

    wiremcp stdio examples/skills/server.py
    wiremcp http examples/skills/server.py
"""

from pathlib import Path

from wiremcp import MCPServer

server = MCPServer("skills-demo", instructions="Skills for PDFs and refunds: see skills/list.")
server.skills(Path(__file__).parent / "library")


@server.tool()
def refund(order: str, amount: float) -> str:
    """Refund an order (what the refunds skill tells the model to do)."""
    return f"refunded {amount:.2f} for order {order}"
