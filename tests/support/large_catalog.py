"""A server with a large catalog offered through search (``ToolSearch``): 360 generated tools, one per action on
each of 36 things of a business's back office (``billing_create_invoice``, ``storage_list_buckets``, ...), and a
weather forecast; ``tools/list`` shows ``search_tools`` and the pinned ``whoami``. For the end-to-end tests of tool
search (``tests/e2e/test_tool_search.py``): ``python -m wiremcp stdio tests.support.large_catalog:server``."""

from __future__ import annotations

from typing import Any, TypedDict

from wiremcp import MCPServer, ToolSearch
from wiremcp.tools import Tool

AREAS = {
    "billing": ["invoice", "customer", "payment", "refund", "subscription", "coupon"],
    "storage": ["bucket", "object", "folder", "snapshot", "volume", "backup"],
    "tracker": ["ticket", "project", "sprint", "comment", "label", "milestone"],
    "code": ["repository", "branch", "pull_request", "release", "webhook", "deployment"],
    "people": ["employee", "team", "role", "leave_request", "timesheet", "badge"],
    "chat": ["channel", "message", "thread", "reaction", "reminder", "bookmark"],
}
ACTIONS = {
    "create": "Create a new {thing} in {area}.",
    "get": "Get one {thing} of {area} by its id.",
    "list": "List the {things} of {area}, newest first.",
    "update": "Change the fields of a {thing} in {area}.",
    "delete": "Delete a {thing} from {area} for good.",
    "archive": "Archive a {thing} of {area}, keeping it readable.",
    "restore": "Restore an archived or deleted {thing} of {area}.",
    "export": "Export the {things} of {area} as CSV.",
    "share": "Share a {thing} of {area} with a colleague by email.",
    "count": "Count the {things} of {area} matching a filter.",
}

server = MCPServer("large-catalog", title="A large catalog", tool_search=ToolSearch(pinned=["whoami"]))


def _generated(area: str, thing: str, action: str, text: str) -> Tool:
    name = f"{area}_{action}_{thing}{'s' if action in ('list', 'export', 'count') else ''}"
    spoken = thing.replace("_", " ")
    described = text.format(thing=spoken, things=f"{spoken}s", area=area)
    properties: dict[str, Any] = {}
    if action in ("get", "update", "delete", "archive", "restore", "share"):
        properties["id"] = {"type": "string", "description": f"The {spoken}'s id"}
    if action in ("create", "update"):
        properties["fields"] = {"type": "object", "description": f"The {spoken}'s fields"}
    if action == "share":
        properties["email"] = {"type": "string", "description": "Whom to share it with"}
    if action in ("list", "count", "export"):
        properties["filter"] = {"type": "string", "description": "Only those matching this text"}

    def handler(**arguments: Any) -> dict[str, Any]:
        return {"tool": name, "arguments": arguments}

    schema = {"type": "object", "properties": properties,
              "required": [key for key in properties if key in ("id", "email")]}
    return Tool(handler, name=name, description=described, input_schema=schema)


for _area, _things in AREAS.items():
    for _thing in _things:
        for _action, _text in ACTIONS.items():
            server.add_tool(_generated(_area, _thing, _action, _text))


@server.tool
def whoami() -> str:
    """Who the caller is, as this server knows them."""
    return "a tester"


class Forecast(TypedDict):
    city: str
    days: int
    summary: str


@server.tool(annotations={"readOnlyHint": True})
def weather_forecast(city: str, days: int = 3) -> Forecast:
    """The weather forecast of a city for the next days: temperatures, rain and wind."""
    return {"city": city, "days": days, "summary": f"{days} days of sun in {city}"}
