"""Mirror pods against a fake client: made with the mirror annotation and a Node ownerReference,
replaced when the static pod's hash changes or a user deletes them, removed when the static pod goes,
and a user's pod of the same name left alone."""

from __future__ import annotations

import copy

from control.client.errors import NotFound
from nodeagent.mirror import MirrorPods, mirror_of, plan
from nodeagent.sources import CONFIG_MIRROR, static_pod


def static(name: str, image: str = "busybox:1") -> dict:
    raw = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
           "spec": {"containers": [{"name": "c", "image": image}]}}
    return static_pod(raw, source=f"/m/{name}.yaml", kind="file", node_name="n1", seen="t")


class FakeClient:
    def __init__(self) -> None:
        self.pods: dict[tuple[str, str], dict] = {}
        self.log: list[str] = []
        self.n = 0

    def list(self, path: str, *, params: dict) -> dict:
        assert params == {"fieldSelector": "spec.nodeName=n1"}
        return {"items": [copy.deepcopy(p) for p in self.pods.values() if p["spec"].get("nodeName") == "n1"]}

    def get(self, path: str) -> dict:
        assert path == "/api/v1/nodes/n1"
        return {"metadata": {"name": "n1", "uid": "node-uid"}}

    def create(self, path: str, body: dict) -> dict:
        self.n += 1
        obj = copy.deepcopy(body)
        obj["metadata"]["uid"] = f"u{self.n}"
        self.pods[mirror_of(obj)] = obj
        self.log.append(f"create {obj['metadata']['name']}")
        return obj

    def delete(self, path: str, *, grace_period_seconds: int, preconditions: dict | None) -> dict:
        namespace, name = path.split("/")[4], path.split("/")[6]
        pod = self.pods.get((namespace, name))
        if pod is None:
            raise NotFound(404, "NotFound", name)
        assert grace_period_seconds == 0 and preconditions == {"uid": pod["metadata"]["uid"]}
        del self.pods[(namespace, name)]
        self.log.append(f"delete {name}")
        return {}


def test_mirror_created_with_annotation_and_owner_then_left_alone():
    client, pod = FakeClient(), static("web")
    mirrors = MirrorPods(client, "n1")
    mirrors.sync([pod])
    mirror = client.pods[("default", "web-n1")]
    assert mirror["metadata"]["annotations"][CONFIG_MIRROR] == pod["metadata"]["uid"]
    assert mirror["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": "node-uid", "controller": True}]
    assert "status" not in mirror and mirror["metadata"]["uid"] != pod["metadata"]["uid"]
    mirrors.sync([pod])
    assert client.log == ["create web-n1"]


def test_changed_deleted_and_orphaned_mirrors():
    client = FakeClient()
    mirrors = MirrorPods(client, "n1")
    mirrors.sync([static("web"), static("db")])
    mirrors.sync([static("web", "busybox:2")])  # web changed, db gone
    assert client.log[2:] == ["delete web-n1", "delete db-n1", "create web-n1"]
    client.pods[("default", "web-n1")]["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"  # kubectl delete
    mirrors.sync([static("web", "busybox:2")])
    assert client.log[5:] == ["delete web-n1", "create web-n1"]
    del client.pods[("default", "web-n1")]  # removed outright
    mirrors.sync([static("web", "busybox:2")])
    assert client.log[-1] == "create web-n1" and len(client.pods) == 1


def test_a_users_pod_with_the_name_is_not_touched():
    user = {"metadata": {"namespace": "default", "name": "web-n1", "uid": "x"}, "spec": {"nodeName": "n1"}}
    assert plan([static("web")], [user]).delete == () and plan([static("web")], [user]).create == ()
