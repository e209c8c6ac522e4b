"""An upstream that serves Agent Skills, for the gateway's tests (launched on stdio by ``remote``): ``refunds``
(with a reference and a binary file), and a tool that adds a skill while it runs (``add_skill``), so that the
gateway hears its resources change."""

from __future__ import annotations

from wiremcp import MCPServer

server = MCPServer("skills-upstream", "1.0.0")

REFUNDS = """---
name: refunds
description: How to refund an order.
---
Look the order up, then refund it.
"""
LOGO = bytes(range(256))

server.add_skill(REFUNDS, files={"references/POLICY.md": "Refunds within 30 days.", "assets/logo.bin": LOGO},
                 prefix="billing")


@server.tool()
def add_skill(name: str) -> str:
    """Serve a skill named ``name`` from now on."""
    return server.add_skill(f"---\nname: {name}\ndescription: The {name} skill.\n---\nDo {name}.\n")
