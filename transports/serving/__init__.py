"""Serving: what puts a server on the wire, apart from the core it serves.

The settings (``WIREMCP_*``), server specs (``MODULE[:ATTR]``, ``path/to/server.py[:ATTR]``), the
composition root that wires the transports, stores and auth around a server (``deployment``, behind
``wiremcp:asgi`` and ``MCPServer.run``), the bundled demo server, and the ``wiremcp`` command line.
"""
