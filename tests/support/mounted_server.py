"""A parent server whose every fixture comes from a mounted child: ``examples/everything.py`` mounted at the
top (no prefix, so that the conformance suite finds the names it expects), and a second child under a prefix
(``weather``), which the suite never names."""

from __future__ import annotations

from examples.everything import server as everything
from wiremcp import MCPServer

weather = MCPServer("weather")


@weather.tool()
async def forecast(city: str) -> str:
    """Tomorrow's weather in a city."""
    return f"Sunny in {city}"


@weather.tool()
async def grow() -> str:
    """Add a tool to this (mounted) server: its parent's clients hear of it."""

    @weather.tool(name="alerts")
    async def alerts(city: str) -> str:
        return f"No alerts for {city}"

    return "added"


@weather.resource("weather://cities/{city}", mime_type="text/plain")
async def city(city: str) -> str:
    return f"{city}: temperate"


server = MCPServer("mounted-everything", "1.0.0", instructions=everything.instructions)
server.mount(everything)
server.mount(weather, prefix="weather")
