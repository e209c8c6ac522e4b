"""``examples/gateway.py`` with views: the writers (scope ``team:writers``) see the word counter only, ops (scope
``team:ops``) the gateway's own ``shout`` only; callers no view names see both."""

from __future__ import annotations

from examples.gateway import server

server.view("writers", tools=["wc_*"], scopes=["team:writers"])
server.view("ops", tools=["shout"], scopes=["team:ops"])
