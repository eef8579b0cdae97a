"""A stdio replay server: ``python -m tests.fuzz.replay_stdio``. Reads one JSON request a line and
writes the lines its script gives."""

from __future__ import annotations

import json
import sys

from tests.fuzz.script import Script


def main() -> None:
    script = Script()
    out = sys.stdout.buffer
    for raw in sys.stdin.buffer:
        try:
            request = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(request, dict):
            continue
        for line in script.answer(request):
            out.write(line.replace(b"\n", b"") + b"\n")
        out.flush()


if __name__ == "__main__":
    main()
