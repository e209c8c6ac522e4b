"""How a process names itself among replicas sharing a store: one name per process life.

A life's name is the configured replica id (``WIREMCP_REPLICA_ID``, cleaned; random without one), ``@``,
and a random incarnation. Leases, inboxes, the owners recorded on events and tasks, and the ids of
server-to-client requests all use the life's name, so a replica restarted under the same id (a Kubernetes
pod keeps its name across container restarts) does not revive its earlier life's lease: the calls and tasks
of that life end as orphaned once its lease lapses, exactly as for a replica that is gone. Error data and
logs show the replica id, which is what operators know.
"""

from __future__ import annotations

import re
import secrets

LIFE = "@"


def life_name(configured: str = "") -> str:
    """A new life's name; safe inside request ids (``<name>:<n>``) and Redis keys."""
    cleaned = re.sub(r"[^A-Za-z0-9.-]", "-", configured)[:64]
    return f"{cleaned or 'r' + secrets.token_hex(5)}{LIFE}{secrets.token_hex(4)}"


def replica_of(name: str) -> str:
    """The replica id in a life's name."""
    return name.partition(LIFE)[0]
