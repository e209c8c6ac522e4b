"""The MCP request methods a server answers, each declared once with every fact the code needs of it; the
tables the dispatcher, the transports, the mount, the observer and the command-line client use are derived
here from that one declaration.

To add a method: declare it in ``METHODS`` (every field is required: ``Method`` has no defaults), and write
its handler, a ``Dispatcher`` method marked ``@handles("the/method")`` (``wiremcp.dispatcher``); the
dispatcher serves it in the eras declared here. The test of this module fails on a method served but not
declared, declared but without a handler, or handled in an era it is not declared in.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Method:
    """What the code knows of one request method."""

    name: str
    handshake: bool
    """Exists in the handshake era (2025-11-25 and before)."""
    stateless: bool
    """Exists in the stateless era (2026-07-28)."""
    capability: str | None
    """The server capability it needs (None: none); without it the method is not found."""
    before_initialize: bool
    """Handshake era: a client may send it before the handshake completes."""
    experimental_task: bool
    """Handshake era: one of 2025-11-25's experimental tasks methods, served only when the session negotiated
    tasks."""
    changes_session: bool
    """Handshake era: it changes the session's own state, which the session store must then save (with Redis,
    another replica reads the session from there)."""
    asks_for_input: bool
    """Its handler may ask the client for input in its course (elicitation, sampling, roots)."""
    cacheable: bool
    """Stateless era: its complete result carries the caching hints (``ttlMs``, ``cacheScope``)."""
    names_component: str | None
    """The parameter whose value names the component it acts on, as the server serves it (a mount turns it
    into the child's)."""
    mirrored_name: str | None
    """Stateless era: the parameter the ``Mcp-Name`` header repeats (None: no such header)."""


Y, _ = True, False
M = Method

METHODS: tuple[Method, ...] = (
    # Columns, as ``Method``'s fields in order: name; handshake era; stateless era; capability; before
    # initialize; experimental task; changes the session; asks for input; cacheable; the parameter naming its
    # component; the parameter ``Mcp-Name`` mirrors. Every column is required: ``Method`` has no defaults.
    M("initialize",               Y, _, None,          Y, _, _, _, _, None,   None),
    M("ping",                     Y, _, None,          Y, _, _, _, _, None,   None),
    M("server/discover",          _, Y, None,          _, _, _, _, Y, None,   None),
    M("subscriptions/listen",     _, Y, None,          _, _, _, _, _, None,   None),
    M("logging/setLevel",         Y, _, "logging",     _, _, Y, _, _, None,   None),
    M("tools/list",               Y, Y, "tools",       _, _, _, _, Y, None,   None),
    M("tools/call",               Y, Y, "tools",       _, _, _, Y, _, "name", "name"),
    M("prompts/list",             Y, Y, "prompts",     _, _, _, _, Y, None,   None),
    M("prompts/get",              Y, Y, "prompts",     _, _, _, Y, _, "name", "name"),
    M("resources/list",           Y, Y, "resources",   _, _, _, _, Y, None,   None),
    M("resources/templates/list", Y, Y, "resources",   _, _, _, _, Y, None,   None),
    M("resources/read",           Y, Y, "resources",   _, _, _, Y, Y, "uri",  "uri"),
    M("resources/subscribe",      Y, _, "resources",   _, _, Y, _, _, "uri",  None),
    M("resources/unsubscribe",    Y, _, "resources",   _, _, Y, _, _, "uri",  None),
    M("completion/complete",      Y, Y, "completions", _, _, _, _, _, None,   None),
    M("skills/list",              Y, Y, None,          _, _, _, _, Y, None,   None),
    M("skills/get",               Y, Y, None,          _, _, _, _, Y, "uri",  None),
    M("resources/directory/read", Y, Y, None,          _, _, _, _, _, "uri",  None),
    M("tasks/get",                Y, Y, "tasks",       _, Y, _, _, _, None,   "taskId"),
    M("tasks/result",             Y, _, "tasks",       _, Y, _, _, _, None,   None),
    M("tasks/list",               Y, _, "tasks",       _, Y, _, _, _, None,   None),
    M("tasks/cancel",             Y, Y, "tasks",       _, Y, _, _, _, None,   "taskId"),
    M("tasks/update",             _, Y, "tasks",       _, _, _, _, _, None,   "taskId"),
)
del M, Y, _

BY_NAME: dict[str, Method] = {method.name: method for method in METHODS}

# -- the tables derived from them ---------------------------------------------------------------------------
ALL = frozenset(BY_NAME)
"""Every request method a server answers, in either era."""
HANDSHAKE = frozenset(m.name for m in METHODS if m.handshake)
STATELESS = frozenset(m.name for m in METHODS if m.stateless)
NOT_STATELESS = HANDSHAKE - STATELESS
"""Handshake-era methods the stateless era does not have."""
NEEDS = {m.name: m.capability for m in METHODS if m.capability is not None}
BEFORE_INITIALIZE = frozenset(m.name for m in METHODS if m.before_initialize)
EXPERIMENTAL_TASKS = frozenset(m.name for m in METHODS if m.experimental_task)
CHANGES_SESSION = frozenset(m.name for m in METHODS if m.changes_session)
ASKS_FOR_INPUT = frozenset(m.name for m in METHODS if m.asks_for_input)
CACHEABLE = frozenset(m.name for m in METHODS if m.cacheable)
NAMES_BY_URI = frozenset(m.name for m in METHODS if m.names_component == "uri")
MIRRORED_NAME = {m.name: m.mirrored_name for m in METHODS if m.mirrored_name is not None}
