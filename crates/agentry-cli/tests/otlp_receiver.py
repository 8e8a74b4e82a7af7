"""An OTLP/HTTP trace receiver for the telemetry test: decodes each export with the official
OpenTelemetry protobuf definitions (the opentelemetry-proto package) and appends one JSON line
per span to the file named by argv[1]. Prints its port, then serves until killed."""

import json
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

OUT = open(sys.argv[1], "a", encoding="utf-8")


def value(v):
    kind = v.WhichOneof("value")
    return getattr(v, kind) if kind else None


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        for resource_spans in request.resource_spans:
            resource = {kv.key: value(kv.value) for kv in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    OUT.write(json.dumps({
                        "path": self.path,
                        "content_type": self.headers.get("Content-Type"),
                        "authorization": self.headers.get("Authorization"),
                        "service": resource.get("service.name"),
                        "name": span.name,
                        "span_id": span.span_id.hex(),
                        "parent": span.parent_span_id.hex(),
                        "trace_id": span.trace_id.hex(),
                        "attributes": {kv.key: value(kv.value) for kv in span.attributes},
                    }) + "\n")
        OUT.flush()
        reply = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args):
        pass


server = HTTPServer(("127.0.0.1", 0), Receiver)
print(server.server_address[1], flush=True)
server.serve_forever()
