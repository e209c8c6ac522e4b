"""The state of a handshake-era session (or of one stateless request): plain, serializable data."""

from __future__ import annotations

import dataclasses

from wiremcp.types import JSONObject


@dataclasses.dataclass(slots=True)
class SessionState:
    """Everything a session needs to be served by any process; JSON-serializable."""

    id: str | None = None
    protocol_version: str | None = None
    client_capabilities: JSONObject = dataclasses.field(default_factory=dict)
    client_info: JSONObject = dataclasses.field(default_factory=dict)
    server_capabilities: list[str] = dataclasses.field(default_factory=list)
    log_level: str | None = None
    subscriptions: set[str] = dataclasses.field(default_factory=set)
    initialized: bool = False  # initialize answered
    ready: bool = False  # notifications/initialized received
    owner: str | None = None
    """Whom the session is bound to (``Principal.key``): only that caller can use it. None without
    authentication."""

    def wants(self, message: JSONObject) -> bool:
        """Whether a server-wide notification (a list changed, a resource was updated) is for this session."""
        method = message.get("method")
        if method == "notifications/resources/updated":
            params = message.get("params")
            return isinstance(params, dict) and params.get("uri") in self.subscriptions
        if isinstance(method, str) and method.endswith("/list_changed"):
            kind = method.split("/")[1]
            return self.ready and kind in self.server_capabilities
        return False

    def to_dict(self) -> JSONObject:
        data = dataclasses.asdict(self)
        data["subscriptions"] = sorted(self.subscriptions)
        return data

    @classmethod
    def from_dict(cls, data: JSONObject) -> SessionState:
        fields = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in data.items() if k in fields}
        if "principal" in data and "owner" not in data:  # saved by a release before the field's rename
            values["owner"] = data["principal"]
        values["subscriptions"] = set(values.get("subscriptions") or ())
        return cls(**values)
