"""``python -m mcp_tasks``: the ``mcp-tasks`` command."""

import sys

from mcp_tasks.cli import main

sys.exit(main())
