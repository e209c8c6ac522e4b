"""What the tests share: real servers started and stopped (uvicorn, redis-server, stdio processes, an
authorization server's upstreams), the fixture servers they serve, and wire helpers. Test modules import
from here only, never from one another or from a ``conftest``."""
