"""Static pod sources: identity and defaults as upstream's applyDefaults, the file source rereading a
directory (dotfiles and bad files skipped) and the URL source reading a Pod or PodList from a local
http.server, keeping its last good list when the URL fails."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator

import pytest

from nodeagent.runtime.spechash import container_hash
from nodeagent.sources import CONFIG_HASH, CONFIG_SEEN, CONFIG_SOURCE, FileSource, URLSource, static_pod

MANIFEST = """
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers: [{name: c, image: "busybox:1"}]
"""


def test_static_pod_identity_and_defaults():
    raw = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
           "spec": {"containers": [{"name": "c", "image": "busybox:1"}]}}
    pod = static_pod(raw, source="/etc/m/web.yaml", kind="file", node_name="Node-1", seen="t0")
    meta = pod["metadata"]
    assert meta["name"] == "web-node-1" and meta["namespace"] == "default"
    assert len(meta["uid"]) == 32 and meta["annotations"][CONFIG_HASH] == meta["uid"]
    assert meta["annotations"][CONFIG_SOURCE] == "file" and meta["annotations"][CONFIG_SEEN] == "t0"
    assert pod["spec"]["nodeName"] == "Node-1"
    assert {"operator": "Exists", "effect": "NoExecute"} in pod["spec"]["tolerations"]
    assert pod["spec"]["containers"][0]["imagePullPolicy"] == "IfNotPresent"  # the API server's defaults
    again = static_pod(raw, source="/etc/m/web.yaml", kind="file", node_name="Node-1", seen="t1")
    assert again["metadata"]["uid"] == meta["uid"]
    other = static_pod(raw, source="/etc/m/other.yaml", kind="file", node_name="Node-1", seen="t0")
    assert other["metadata"]["uid"] != meta["uid"]
    assert container_hash(pod["spec"]["containers"][0]) == container_hash(again["spec"]["containers"][0])
    url = static_pod(raw, source="http://x/", kind="http", node_name="Node-1", seen="t0")
    assert "tolerations" not in url["spec"] and url["metadata"]["annotations"][CONFIG_SOURCE] == "http"


def test_file_source_rereads_and_reports_changes_only(tmp_path):
    updates: list[list[dict]] = []
    (tmp_path / "web.yaml").write_text(MANIFEST)
    (tmp_path / ".hidden.yaml").write_text(MANIFEST.replace("web", "hidden"))
    (tmp_path / "broken.yaml").write_text("kind: [unclosed")
    (tmp_path / "invalid.yaml").write_text(MANIFEST.replace("name: c,", "name: Bad_Name,"))
    source = FileSource(str(tmp_path), 60, updates.append, "n1")
    assert source.poll() and [p["metadata"]["name"] for p in updates[-1]] == ["web-n1"]
    uid = updates[-1][0]["metadata"]["uid"]
    assert not source.poll()  # unchanged: no update, config.seen kept
    (tmp_path / "web.yaml").write_text(MANIFEST.replace("busybox:1", "busybox:2"))
    assert source.poll() and updates[-1][0]["metadata"]["uid"] != uid
    (tmp_path / "web.yaml").unlink()
    assert source.poll() and updates[-1] == []


def test_file_source_thread_sends_the_first_list_at_once(tmp_path):
    got = threading.Event()
    (tmp_path / "web.json").write_text(json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "j"},
                                                    "spec": {"containers": [{"name": "c", "image": "i"}]}}))
    seen: list[list[dict]] = []
    source = FileSource(str(tmp_path), 60, lambda pods: (seen.append(pods), got.set()), "n1")
    source.start()
    try:
        assert got.wait(5) and seen[0][0]["metadata"]["name"] == "j-n1"
    finally:
        source.stop()


class _Handler(http.server.BaseHTTPRequestHandler):
    body = b""
    status = 200

    def do_GET(self) -> None:
        self.send_response(self.status)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def web() -> Iterator[tuple[str, type[_Handler]]]:
    handler = type("H", (_Handler,), {})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/pods", handler
    finally:
        server.shutdown()
        server.server_close()


def test_url_source_reads_a_pod_list_and_keeps_the_last_good_list_on_errors(web):
    url, handler = web
    item = {"metadata": {"name": "a"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    other = {**item, "metadata": {"name": "b", "namespace": "kube-system"}}
    handler.body = json.dumps({"kind": "PodList", "apiVersion": "v1", "items": [item, other]}).encode()
    updates: list[list[dict]] = []
    source = URLSource(url, 60, updates.append, "n1")
    assert source.poll()
    assert [(p["metadata"]["namespace"], p["metadata"]["name"]) for p in updates[-1]] == [
        ("default", "a-n1"), ("kube-system", "b-n1")]
    handler.status = 500
    assert not source.poll() and len(updates) == 1
    handler.status, handler.body = 200, b"not: [a pod"
    assert not source.poll() and len(updates) == 1
    handler.body = MANIFEST.encode()
    assert source.poll() and [p["metadata"]["name"] for p in updates[-1]] == ["web-n1"]
    assert updates[-1][0]["metadata"]["annotations"][CONFIG_SOURCE] == "http"
