"""The OFC agent API over the standard library's HTTP server."""

import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from ofc_py_shout import shout

# Bodies larger than this are refused: the floor never sends more to a small agent.
MAX_BODY = 1 << 20

INFO = {
    "id": "@pyecho",
    "name": "Py Echo",
    "tagline": "Shouts back the last message",
    "description": "A Python agent installed by ofc from a wheel with a dependency.",
    "activation": "mention",
}


class Handler(BaseHTTPRequestHandler):
    def _send(self, status, doc):
        body = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _body(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n > MAX_BODY:
            raise ValueError("body too large")
        return json.loads(self.rfile.read(n) or b"{}")

    def do_GET(self):
        if self.path == "/ofc/info":
            self._send(200, INFO)
        else:
            self._send(404, {"error": "not found"})

    def do_POST(self):
        try:
            req = self._body()
        except ValueError as e:
            self._send(400, {"error": str(e)})
            return
        if self.path == "/ofc/should-wake":
            self._send(200, {"wake": True})
        elif self.path == "/ofc/respond":
            messages = req.get("messages") or []
            last = messages[-1].get("content", "") if messages else ""
            self._send(200, {"content": shout(last)})
        else:
            self._send(404, {"error": "not found"})

    def log_message(self, *args):
        pass


def main():
    port = int(os.environ.get("OFC_PORT", "0"))
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    print(f"listening on 127.0.0.1:{server.server_address[1]}", file=sys.stderr, flush=True)
    server.serve_forever()
    return 0
