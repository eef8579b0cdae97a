"""A launcher like npx or uvx: starts the real server as its child, sharing its stdin, stdout and
stderr, and waits for it. Killed, it dies alone: the child lives on, holding the pipes."""

from __future__ import annotations

import subprocess
import sys

if __name__ == "__main__":
    sys.exit(subprocess.call([sys.executable, *sys.argv[1:]]))
