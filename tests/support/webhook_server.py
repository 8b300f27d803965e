"""A small admission webhook server for tests, standard library only, so the same file runs in a test's
thread and as `python3 webhook_server.py CERT KEY PORT` in a pod.

Paths (each answers an AdmissionReview v1 in kind):
- `/validate`: refuses an object labelled `webhook-test/deny` with the message `denied by the test webhook:
  <name>`, warns `webhook saw <name>` on every request, and adds the audit annotation `seen: <name>`.
- `/mutate`: adds the label `webhook-test/mutated: "yes"` with a JSONPatch.
- `/mutate-again`: adds `webhook-test/second: "<labels it saw>"` (for reinvocation: it sees the first one's).
- `/slow`: sleeps 3 s, then allows.
- `/convert`: a ConversionReview between `v1` (`spec.host`, `spec.port`) and `v2` (`spec.address`).
- `/garbage`: answers with a body that is no AdmissionReview.
- `/apis/...`: a minimal aggregated API (group `webhook-test.example.com/v1`, resource `things`, one item).
"""

from __future__ import annotations

import base64
import json
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

GROUP_VERSION = "webhook-test.example.com/v1"


def _name(request: dict[str, Any]) -> str:
    obj = request.get("object") or request.get("oldObject") or {}
    return str((obj.get("metadata") or {}).get("name") or request.get("name") or "")


def _labels(request: dict[str, Any]) -> dict[str, str]:
    obj = request.get("object") or {}
    return dict((obj.get("metadata") or {}).get("labels") or {})


def _patch(operations: list[dict[str, Any]]) -> dict[str, str]:
    return {"patchType": "JSONPatch", "patch": base64.b64encode(json.dumps(operations).encode()).decode()}


def _label_ops(request: dict[str, Any], key: str, value: str) -> list[dict[str, Any]]:
    obj = request.get("object") or {}
    escaped = key.replace("~", "~0").replace("/", "~1")
    if not (obj.get("metadata") or {}).get("labels"):
        return [{"op": "add", "path": "/metadata/labels", "value": {key: value}}]
    return [{"op": "add", "path": f"/metadata/labels/{escaped}", "value": value}]


def answer(path: str, review: dict[str, Any]) -> dict[str, Any]:
    """The AdmissionReview to answer `review` with on `path`."""
    request = review.get("request") or {}
    response: dict[str, Any] = {"uid": request.get("uid", ""), "allowed": True}
    name = _name(request)
    if path.startswith("/validate"):
        response["warnings"] = [f"webhook saw {name}"]
        response["auditAnnotations"] = {"seen": name}
        if "webhook-test/deny" in _labels(request):
            response.update(allowed=False, status={"code": 403, "message": f"denied by the test webhook: {name}"})
    elif path.startswith("/mutate-again"):
        seen = "_".join(sorted(k for k in _labels(request) if k != "webhook-test/second"))
        response.update(_patch(_label_ops(request, "webhook-test/second", seen.replace("/", "."))))
    elif path.startswith("/mutate"):
        response.update(_patch(_label_ops(request, "webhook-test/mutated", "yes")))
    elif path.startswith("/slow"):
        time.sleep(3)
    return {"apiVersion": review.get("apiVersion", "admission.k8s.io/v1"), "kind": "AdmissionReview",
            "response": response}


def convert(review: dict[str, Any]) -> dict[str, Any]:
    """The ConversionReview answering `review`: v1 `host`+`port` <-> v2 `address` ("host:port")."""
    request = review.get("request") or {}
    desired = str(request.get("desiredAPIVersion", ""))
    converted = []
    for obj in request.get("objects") or []:
        spec = dict(obj.get("spec") or {})
        if desired.endswith("/v2") and "host" in spec:
            spec["address"] = f"{spec.pop('host')}:{spec.pop('port', 80)}"
        elif desired.endswith("/v1") and "address" in spec:
            host, _, port = str(spec.pop("address")).partition(":")
            spec.update(host=host, port=int(port or 80))
        converted.append({**obj, "apiVersion": desired, "spec": spec})
    return {"apiVersion": review.get("apiVersion"), "kind": "ConversionReview",
            "response": {"uid": request.get("uid", ""), "result": {"status": "Success"},
                         "convertedObjects": converted}}


def _api(path: str) -> tuple[int, dict[str, Any]]:
    """The aggregated API's answers (discovery and one list)."""
    if path.rstrip("/") == f"/apis/{GROUP_VERSION}":
        return 200, {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": GROUP_VERSION,
                     "resources": [{"name": "things", "singularName": "thing", "namespaced": True, "kind": "Thing",
                                    "verbs": ["get", "list"]}]}
    if path.rstrip("/") == "/apis/webhook-test.example.com":
        return 200, {"kind": "APIGroup", "apiVersion": "v1", "name": "webhook-test.example.com",
                     "versions": [{"groupVersion": GROUP_VERSION, "version": "v1"}],
                     "preferredVersion": {"groupVersion": GROUP_VERSION, "version": "v1"}}
    if path.startswith(f"/apis/{GROUP_VERSION}/") and path.split("?")[0].endswith("/things"):
        parts = path.split("?")[0].split("/")
        namespace = parts[parts.index("namespaces") + 1] if "namespaces" in parts else "default"
        return 200, {"kind": "ThingList", "apiVersion": GROUP_VERSION, "metadata": {"resourceVersion": "1"},
                     "items": [{"kind": "Thing", "apiVersion": GROUP_VERSION,
                                "metadata": {"name": "served-by-the-aggregated-api", "namespace": namespace,
                                             "creationTimestamp": "2026-01-01T00:00:00Z"}}]}
    return 404, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 404, "reason": "NotFound",
                 "message": "not found"}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen_headers: list[dict[str, str]] = []

    def _send(self, code: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        review = json.loads(self.rfile.read(length) or b"{}")
        if self.path.startswith("/garbage"):
            self._send(200, b"this is no AdmissionReview", "text/plain")
            return
        if self.path.startswith("/convert"):
            self._send(200, json.dumps(convert(review)).encode())
            return
        self._send(200, json.dumps(answer(self.path, review)).encode())

    def do_GET(self) -> None:
        seen = {k: v for k, v in self.headers.items()}
        seen["X-Remote-Group"] = ",".join(self.headers.get_all("X-Remote-Group") or [])
        peer = self.connection.getpeercert() if hasattr(self.connection, "getpeercert") else None
        seen["peer-cn"] = next((value for rdn in (peer or {}).get("subject", ()) for key, value in rdn
                                if key == "commonName"), "")
        type(self).seen_headers.append(seen)
        code, body = _api(self.path)
        self._send(code, json.dumps(body).encode())

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that gave up (the API server's timeout) is expected here


def serve(cert: str, key: str, port: int, *, host: str = "0.0.0.0",
          client_ca: str | None = None) -> ThreadingHTTPServer:
    """A started server (its thread is a daemon); `.shutdown()` ends it. With `client_ca`, a client
    certificate it signed is asked for (not required)."""
    server = _Server((host, port), _Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    if client_ca:
        context.load_verify_locations(client_ca)
        context.verify_mode = ssl.CERT_OPTIONAL
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


if __name__ == "__main__":
    serve(sys.argv[1], sys.argv[2], int(sys.argv[3]))
    threading.Event().wait()
