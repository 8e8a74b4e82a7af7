"""A webhook receiver for the fault tests: verifies every delivery with the `standardwebhooks`
package (the Standard Webhooks reference library), records it as a line of JSON, and answers
as the request path asks.

    python webhook_receiver.py SECRET LOG_FILE

Prints the port it listens on (127.0.0.1, chosen by the system) as its first line. Paths:

    /deny     200 with a PreToolUse deny decision
    /empty    200 with an empty body

A delivery whose signature does not verify is answered 401 with the library's message.
"""

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

SECRET, LOG = sys.argv[1], sys.argv[2]
HOOK = Webhook(SECRET)
LOCK = threading.Lock()

DENY = {
    "hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": "denied by the receiver",
    }
}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as a real receiver

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        headers = {k.lower(): v for k, v in self.headers.items()}
        record = {"path": self.path, "headers": headers, "body": body.decode(), "verified": False}
        status, answer = 200, b""
        try:
            HOOK.verify(body, headers)
            record["verified"] = True
            if self.path == "/deny":
                answer = json.dumps(DENY).encode()
        except WebhookVerificationError as e:
            status, answer = 401, str(e).encode()
        with LOCK, open(LOG, "a") as log:
            log.write(json.dumps(record) + "\n")
        try:
            self.send_response(status)
            self.send_header("Content-Length", str(len(answer)))
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(answer)
        except (BrokenPipeError, ConnectionResetError):
            pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(server.server_address[1], flush=True)
server.serve_forever()
