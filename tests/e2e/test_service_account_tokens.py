"""Service account tokens on a real cluster (the shared `up --nodes 3`): a pod on `slimkube/python:1` runs
the official client's `load_incluster_config()` and, bound to `view` in its namespace, lists the pods there
through the ClusterIP `kubernetes` Service while Secrets answer 403; the token the kubelet projected into it
is bound to the pod, so once the pod is deleted the same token gets 401."""

from __future__ import annotations

import json
from typing import Any

import requests

from nodeagent.images import PYTHON, ensure_image
from tests.e2e.shared_cluster import RunningCluster
from tests.support.polling import wait_for

IN_CLUSTER = """
import json
from kubernetes import client, config
from kubernetes.client.rest import ApiException

config.load_incluster_config()
namespace = open("/var/run/secrets/kubernetes.io/serviceaccount/namespace").read()
token = open("/var/run/secrets/kubernetes.io/serviceaccount/token").read()
core = client.CoreV1Api()
pods = [p.metadata.name for p in core.list_namespaced_pod(namespace).items]
try:
    core.list_namespaced_secret(namespace)
    secrets = 200
except ApiException as exc:
    secrets = exc.status
print(json.dumps({"pods": pods, "secrets": secrets, "token": token}))
"""


def http(workload_cluster: RunningCluster, path: str, token: str) -> requests.Response:
    config = workload_cluster.client.config
    return requests.get(config.server + path, headers={"Authorization": f"Bearer {token}"},
                        verify=config.ca_file or True, timeout=30)


def phase(workload_cluster: RunningCluster, ns: str, name: str) -> str:
    return workload_cluster.client.get(f"/api/v1/namespaces/{ns}/pods/{name}").get("status", {}).get("phase", "")


def test_an_in_cluster_client_lists_pods_with_its_token(workload_cluster: RunningCluster, cluster_namespace: str,
                                                        docker_api: Any) -> None:
    ensure_image(docker_api, PYTHON)
    api, ns = workload_cluster.client, cluster_namespace
    api.create(f"/api/v1/namespaces/{ns}/serviceaccounts", {"metadata": {"name": "lister"}})
    api.create(f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings", {
        "metadata": {"name": "lister-view"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [{"kind": "ServiceAccount", "name": "lister", "namespace": ns}]})
    created = api.create(f"/api/v1/namespaces/{ns}/pods", {"metadata": {"name": "lister"}, "spec": {
        "serviceAccountName": "lister", "restartPolicy": "Never", "terminationGracePeriodSeconds": 0,
        "containers": [{"name": "py", "image": PYTHON.ref, "command": ["python3", "-c", IN_CLUSTER]}]}})
    volume = created["spec"]["volumes"][0]
    assert volume["name"].startswith("kube-api-access-")
    wait_for(lambda: phase(workload_cluster, ns, "lister") in ("Succeeded", "Failed"), 120, "the client pod to end")
    log = http(workload_cluster, f"/api/v1/namespaces/{ns}/pods/lister/log", api.config.token or "").text
    assert phase(workload_cluster, ns, "lister") == "Succeeded", log
    answer = json.loads(log.strip().splitlines()[-1])
    assert answer["pods"] == ["lister"] and answer["secrets"] == 403

    def status_with(token: str) -> int:
        return http(workload_cluster, f"/api/v1/namespaces/{ns}/pods", token).status_code

    assert status_with(answer["token"]) == 200
    api.delete(f"/api/v1/namespaces/{ns}/pods/lister", grace_period_seconds=0)
    wait_for(lambda: status_with(answer["token"]) == 401, 60, "the deleted pod's token refused")
