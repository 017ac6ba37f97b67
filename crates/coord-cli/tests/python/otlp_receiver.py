"""An OTLP/HTTP trace receiver on loopback for the tests: it decodes each export with
OpenTelemetry's own protobuf definitions (opentelemetry-proto) and appends every span it
received, as one JSON line, to the file named by its first argument. It prints its port
on its first line of output."""
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

OUT = sys.argv[1]


def value(v):
    kind = v.WhichOneof("value")
    return getattr(v, kind) if kind else None


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path != "/v1/traces":
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        req = ExportTraceServiceRequest()
        req.ParseFromString(body)
        lines = []
        for rs in req.resource_spans:
            resource = {a.key: value(a.value) for a in rs.resource.attributes}
            for ss in rs.scope_spans:
                for s in ss.spans:
                    lines.append(json.dumps({
                        "name": s.name, "kind": s.kind, "trace_id": s.trace_id.hex(), "span_id": s.span_id.hex(),
                        "parent_span_id": s.parent_span_id.hex(), "status": s.status.code,
                        "service": resource.get("service.name"), "content_type": self.headers.get("Content-Type"),
                        "attributes": {a.key: value(a.value) for a in s.attributes},
                    }))
        with open(OUT, "a") as f:
            for line in lines:
                f.write(line + "\n")
        out = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
