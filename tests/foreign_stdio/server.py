"""A stdio MCP server written from scratch (json and sys only), with habits real servers have.

Flags (any combination):
  --ignore-eof       keep running after stdin ends (as servers that never read it again do)
  --ignore-sigterm   ignore SIGTERM (only SIGKILL ends it)
  --stop-reading     answer the first request, then never read stdin again
  --pid-file PATH    write "pid pgid sid" to PATH once running
  --dark             answer server/discover only: any other request is read, a notifications/dark
                     {"method": <its method>} sent, and never answered (a server gone dark)

Tools (tools/call by name): "echo" answers with its arguments; "whoami" answers with the process'
pid, pgid and sid; "die" prints lines to stderr (one holding a token) and exits with code 4;
"deep" first writes a line nested 100,000 levels deep, then answers; "ask" sends the client a
request (ping, id "srv-1") and then answers at once, without waiting for the client's response;
"asked" answers with the responses the client sent to the server's requests so far; "slow" sends a
notifications/message "started <id>" and never answers (as a long call does); "cancellations"
answers with the params of every notifications/cancelled received so far.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time

TOKEN = "tok3n0123456789abcdefABCDEF9876543210"


def main(argv: list[str]) -> None:
    if "--ignore-sigterm" in argv:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if "--pid-file" in argv:
        path = argv[argv.index("--pid-file") + 1]
        with open(path + ".tmp", "w") as sink:
            sink.write(f"{os.getpid()} {os.getpgid(0)} {os.getsid(0)}")
        os.replace(path + ".tmp", path)
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    lock = threading.Lock()
    answers: list[object] = []
    cancellations: list[object] = []

    def send(message: dict[str, object]) -> None:
        with lock:
            stdout.write(json.dumps(message).encode() + b"\n")
            stdout.flush()

    def result(request_id: object, value: dict[str, object]) -> None:
        send({"jsonrpc": "2.0", "id": request_id, "result": value})

    def text(value: object) -> dict[str, object]:
        return {"resultType": "complete", "content": [{"type": "text", "text": json.dumps(value)}]}

    while True:
        line = stdin.readline()
        if not line:
            break
        message = json.loads(line)
        if "method" not in message:
            answers.append(message)  # a response to one of our requests
            continue
        if "id" not in message:
            if message.get("method") == "notifications/cancelled":
                cancellations.append(message.get("params"))
            continue
        request_id = message["id"]
        params = message.get("params") or {}
        name = params.get("name")
        if message.get("method") == "server/discover":  # the client's era probe, before any call
            result(request_id, {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}})
            continue
        if "--dark" in argv:
            send({"jsonrpc": "2.0", "method": "notifications/dark", "params": {"method": message.get("method")}})
            continue
        if name == "whoami":
            result(request_id, text([os.getpid(), os.getpgid(0), os.getsid(0)]))
        elif name == "die":
            for n in range(30):
                print(f"starting step {n}", file=sys.stderr)
            print(f"fatal: cannot open the task store for task {TOKEN}", file=sys.stderr)
            print("giving up", file=sys.stderr, flush=True)
            os._exit(4)
        elif name == "deep":
            with lock:
                stdout.write(b"[" * 100_000 + b"]" * 100_000 + b"\n")
                stdout.flush()
            result(request_id, text("after the deep line"))
        elif name == "ask":
            send({"jsonrpc": "2.0", "id": "srv-1", "method": "ping", "params": {}})
            result(request_id, text("asked"))
        elif name == "asked":
            result(request_id, text(answers))
        elif name == "slow":
            note = {"level": "info", "data": f"started {request_id}"}
            send({"jsonrpc": "2.0", "method": "notifications/message", "params": note})
        elif name == "cancellations":
            result(request_id, text(cancellations))
        else:
            result(request_id, text(params.get("arguments")))
        if "--stop-reading" in argv:
            break
    if "--ignore-eof" in argv or "--stop-reading" in argv:
        while True:
            time.sleep(3600)


if __name__ == "__main__":
    main(sys.argv[1:])
