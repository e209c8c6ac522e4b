"""``wiremcp.methods``: one declaration per MCP request method, every fact required, and the tables the code
uses derived from it (the dispatcher's, the transports', the mount's, the observer's, the command line's)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from wiremcp import MCPServer, methods, mirrored_headers
from wiremcp.dispatcher import _HANDLERS, Dispatcher
from wiremcp.input_required import INPUT_CAPABLE
from wiremcp.runtime import Runtime
from wiremcp.transports import upstream as client


def test_every_method_the_dispatcher_serves_is_declared_for_the_eras_it_is_served_in() -> None:
    handshake, stateless_era = Dispatcher(Runtime(MCPServer("s"))).methods()
    assert handshake == methods.HANDSHAKE
    assert stateless_era == methods.STATELESS
    assert handshake | stateless_era == methods.ALL


def test_a_method_cannot_be_declared_without_every_fact() -> None:
    """No field has a default: a new method that leaves out whether it changes the session (the fact a missing
    entry in the old hand-kept table lost silently with Redis) does not get past its declaration."""
    assert all(f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
               for f in dataclasses.fields(methods.Method))
    assert len(methods.BY_NAME) == len(methods.METHODS)  # no name declared twice


def test_the_tables_in_use_are_the_declarations() -> None:
    assert {"logging/setLevel", "resources/subscribe", "resources/unsubscribe"} == methods.CHANGES_SESSION
    assert {"tools/call", "prompts/get", "resources/read"} == INPUT_CAPABLE
    assert {"initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe",
            "tasks/result", "tasks/list"} == methods.NOT_STATELESS
    assert mirrored_headers.NAMED is methods.MIRRORED_NAME


def test_the_command_line_client_mirrors_the_same_names_as_the_server_checks() -> None:
    """Its own shorter copy had no ``tasks/*``: a task polled with ``wiremcp call`` sent no ``Mcp-Name``."""
    source = Path(client.__file__).read_text()
    assert "methods.MIRRORED_NAME" in source  # the one table, not a copy of its own
    assert mirrored_headers.NAMED is methods.MIRRORED_NAME
    assert mirrored_headers.NAMED["tasks/get"] == "taskId"


def test_what_changes_a_session_or_asks_for_input_exists_where_it_is_said_to() -> None:
    for method in methods.METHODS:
        if method.changes_session or method.before_initialize or method.experimental_task:
            assert method.handshake, method  # facts of the handshake era only
        if method.mirrored_name is not None:
            assert method.stateless, method
        if method.asks_for_input:
            assert method.handshake, method
            assert method.stateless, method


def test_every_handler_is_of_a_declared_method_in_an_era_it_exists_in() -> None:
    for method, era, _ in _HANDLERS:
        declared = methods.BY_NAME[method]
        assert era is None or getattr(declared, era), (method, era)
    handled = {(method, era) for method, era, _ in _HANDLERS}
    assert len(handled) == len(_HANDLERS)  # no method handled twice in the same era
