"""A webhook receiver for agentry-external's tests: verifies every delivery with the
`standardwebhooks` package (the Standard Webhooks reference library), records it as a line of
JSON, and answers as the request path asks.

    python webhook_receiver.py SECRET LOG_FILE

Prints the port it listens on (127.0.0.1, chosen by the system) as its first line. Paths:

    /deny        200 with a PreToolUse deny decision
    /empty       200 with an empty body
    /status/N    status N
    /slow/MS     waits MS milliseconds, then 200 with an empty body
    /text        200 with a body that is not JSON
    /flaky/N     503 for the first N deliveries of a webhook-id, then 200
    /once        200 the first time a webhook-id arrives, 409 for the same id again (a replay)
    /late        verifies as if the delivery arrived ten minutes late (outside the tolerance)

A delivery whose signature does not verify is answered 401 with the library's message.
"""

import json
import sys
import threading
import time
from datetime import datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from unittest import mock

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

SECRET, LOG = sys.argv[1], sys.argv[2]
HOOK = Webhook(SECRET)
LOCK = threading.Lock()
SEEN = {}  # webhook-id -> deliveries of it so far
ACCEPTED = set()  # webhook-ids /once took


class TenMinutesLater(datetime):
    @classmethod
    def now(cls, tz=None):
        return datetime.now(tz) + timedelta(minutes=10)


def verify(body, headers, late):
    if late:
        with LOCK, mock.patch("standardwebhooks.webhooks.datetime", TenMinutesLater):
            return HOOK.verify(body, headers)
    return HOOK.verify(body, headers)


DENY = {
    "hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": "denied by the receiver",
    }
}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, so connection reuse shows

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        headers = {k.lower(): v for k, v in self.headers.items()}
        parts = self.path.strip("/").split("/")
        kind = parts[0]
        record = {
            "path": self.path,
            "headers": headers,
            "body": body.decode(),
            "peer_port": self.client_address[1],
            "verified": False,
        }
        status, answer, delay = 200, b"", 0.0
        try:
            verify(body, headers, kind == "late")
            record["verified"] = True
        except WebhookVerificationError as e:
            record["error"] = str(e)
            status, answer = 401, str(e).encode()
        if record["verified"]:
            msg_id = headers["webhook-id"]
            with LOCK:
                SEEN[msg_id] = SEEN.get(msg_id, 0) + 1
                seen = SEEN[msg_id]
            if kind == "deny":
                answer = json.dumps(DENY).encode()
            elif kind == "status":
                status, answer = int(parts[1]), b"boom"
            elif kind == "slow":
                delay = int(parts[1]) / 1000
            elif kind == "text":
                answer = b"all good"
            elif kind == "flaky" and seen <= int(parts[1]):
                status = 503
            elif kind == "once":
                with LOCK:
                    if msg_id in ACCEPTED:
                        status, answer = 409, b"replayed webhook-id"
                        record["error"] = "replayed webhook-id"
                    ACCEPTED.add(msg_id)
        record["status"] = status
        with LOCK, open(LOG, "a") as log:
            log.write(json.dumps(record) + "\n")
        if delay:
            time.sleep(delay)
        try:
            self.send_response(status)
            self.send_header("Content-Length", str(len(answer)))
            self.send_header("Content-Type", "application/json" if answer.startswith(b"{") else "text/plain")
            self.end_headers()
            self.wfile.write(answer)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (its timeout)


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(server.server_address[1], flush=True)
server.serve_forever()
