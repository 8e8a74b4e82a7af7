#!/usr/bin/env python3
"""A persistent agentry hook: one process answers every event, one JSON line each way.

Blocks `rm -rf` in Bash calls and lets everything else through. Register it with
{"type": "persistent", "command": "python3 guard.py"}.
"""
import json
import sys

for line in sys.stdin:
    request = json.loads(line)
    event = request["input"]
    answer = {"id": request["id"]}
    command = event.get("tool_input", {}).get("command", "")
    if event.get("tool_name") == "Bash" and "rm -rf" in command:
        answer["block"] = "rm -rf is not allowed here"
    print(json.dumps(answer), flush=True)
