"""An MCP server (stdio) written as raw JSON-RPC, for agentry-mcp's tests: it answers exactly
what its spec (JSON, the first argument) says, including what no SDK would let a server say.

The spec:
  {"tools": [...],            # the tools/list answer, as given (inputSchema defaults to an object)
   "answers": {"tool": {...}}, # per tool: how tools/call answers (below); default: echo
   "init": "ok" | "garbage" | {"exit": N, "stderr": "..."} | {"fail_first": "/marker/path"},
   "ignore_eof": false,        # keep running when stdin closes
   "ignore_sigterm": false}
Answers: {"result": {...}} sends it as the result; {"error": {"code", "message", "data"}} a
JSON-RPC error; {"exit": N, "stderr": "..."} exits mid-call; {"signal": N} kills itself with
the signal; {"block": seconds} sleeps without reading stdin (a hung server); {"ignore": true}
never answers (but answers pings); {"env": true} returns its environment as JSON text;
{"echo": true} returns its arguments as JSON text.
Lines go to the file RAW_LOG names: "stdin closed", "SIGTERM", "cancelled <id>".
"""

import json
import os
import signal
import sys
import time

spec = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}


def log(line):
    path = os.environ.get("RAW_LOG")
    if path:
        with open(path, "a") as f:
            f.write(line + "\n")


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def on_sigterm(_signum, _frame):
    log("SIGTERM")
    if not spec.get("ignore_sigterm"):
        sys.exit(143)


signal.signal(signal.SIGTERM, on_sigterm)

init = spec.get("init", "ok")
if isinstance(init, dict) and "exit" in init:
    print(init.get("stderr", ""), file=sys.stderr, flush=True)
    sys.exit(init["exit"])
if isinstance(init, dict) and "fail_first" in init:
    marker = init["fail_first"]
    if not os.path.exists(marker):
        open(marker, "w").close()
        print("not ready yet", file=sys.stderr, flush=True)
        sys.exit(1)

tools = []
for tool in spec.get("tools", []):
    tool = dict(tool)
    tool.setdefault("inputSchema", {"type": "object"})
    tools.append(tool)


def text(value):
    return {"content": [{"type": "text", "text": value}]}


def call(request):
    params = request.get("params") or {}
    answer = spec.get("answers", {}).get(params.get("name"), {"echo": True})
    if "result" in answer:
        return {"result": answer["result"]}
    if "error" in answer:
        return {"error": answer["error"]}
    if "exit" in answer:
        print(answer.get("stderr", ""), file=sys.stderr, flush=True)
        os._exit(answer["exit"])
    if "signal" in answer:
        os.kill(os.getpid(), answer["signal"])
        time.sleep(10)
    if "block" in answer:
        time.sleep(answer["block"])
        return {"result": text("woke up")}
    if "flood" in answer:
        # `flood` MiB on one line that never ends.
        chunk = "x" * (1 << 20)
        for _ in range(answer["flood"]):
            sys.stdout.write(chunk)
        sys.stdout.flush()
        time.sleep(3600)
    if answer.get("ignore"):
        return None
    if answer.get("env"):
        return {"result": text(json.dumps(dict(os.environ)))}
    return {"result": text(json.dumps(params.get("arguments") or {}))}


while True:
    line = sys.stdin.readline()
    if not line:
        log("stdin closed")
        if spec.get("ignore_eof"):
            while True:
                time.sleep(1)
        sys.exit(0)
    request = json.loads(line)
    method = request.get("method")
    if "id" not in request:
        if method == "notifications/cancelled":
            log("cancelled %s" % (request.get("params") or {}).get("requestId"))
        continue
    if init == "garbage":
        sys.stdout.write("this is not JSON-RPC\n")
        sys.stdout.flush()
        continue
    if method == "initialize":
        answer = {"result": {
            "protocolVersion": request["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "raw", "version": "1"},
        }}
    elif method == "tools/list":
        answer = {"result": {"tools": tools}}
    elif method == "ping":
        answer = {"result": {}}
    elif method == "tools/call":
        answer = call(request)
    else:
        answer = {"error": {"code": -32601, "message": "no method " + str(method)}}
    if answer is not None:
        send(dict(answer, jsonrpc="2.0", id=request["id"]))
