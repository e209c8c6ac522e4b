"""``python -m wiremcp``: the command line, as hosts launch it with an interpreter's absolute path."""

import sys

from wiremcp.transports.serving.cli import main

sys.exit(main())
