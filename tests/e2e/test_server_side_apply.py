"""End-to-end: server-side apply and managedFields with the real clients — kubectl 1.33's `apply
--server-side` (twice, a conflicting manager, `--force-conflicts`, the upgrade from client-side apply,
`--show-managed-fields`) and the official Python client's `create_from_yaml(..., apply=True)`.

A standalone API server (the module's `apiserver` fixture from conftest.py) is enough: apply is the API
server's business alone, no controller or node takes part."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config, utils
from kubernetes.client.rest import ApiException

from tests.conftest import unavailable
from tests.e2e.conftest import KUBECTLS, Kubectl
from tests.support.apiserver import Endpoint

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


@pytest.fixture
def kubectl(apiserver: Endpoint, tmp_path: Path) -> Kubectl:
    """kubectl 1.33 only: the newest kubectl, whose apply defaults this test pins down."""
    binary = KUBECTLS["1.33"]
    if not os.access(binary, os.X_OK):
        unavailable("kubectl 1.33", f"{binary} is missing")
    return Kubectl(binary, apiserver.kubeconfig, str(tmp_path / "kube-cache"))


@pytest.fixture
def ns(kubectl: Kubectl) -> str:
    name = f"ssa-{uuid.uuid4().hex[:8]}"
    kubectl.run("create", "namespace", name)
    return name


def deployment(name: str, *, replicas: int = 2, image: str = "nginx:1.25",
               labels: dict[str, str] | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if labels:
        metadata["labels"] = labels
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": metadata,
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "web", "image": image,
                                                           "ports": [{"containerPort": 80}]}]}}}}


def stored(kubectl: Kubectl, ns: str, name: str) -> dict[str, Any]:
    return json.loads(kubectl.run("get", "deployment", name, "-n", ns, "-o", "json",
                                  "--show-managed-fields").stdout)


def entries(obj: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(e["manager"], e["operation"]): e for e in obj["metadata"].get("managedFields", [])}


def test_apply_twice_creates_then_changes_nothing(kubectl: Kubectl, ns: str) -> None:
    first = kubectl.run("apply", "--server-side", "-n", ns, "-f", "-", input=yaml.safe_dump(deployment("web")))
    assert "deployment.apps/web serverside-applied" in first.stdout
    created = stored(kubectl, ns, "web")
    apply_entry = entries(created)[("kubectl", "Apply")]
    assert apply_entry["apiVersion"] == "apps/v1" and apply_entry["fieldsType"] == "FieldsV1"
    fields = apply_entry["fieldsV1"]
    assert fields["f:spec"]["f:replicas"] == {} and fields["f:spec"]["f:selector"] == {}
    container = fields["f:spec"]["f:template"]["f:spec"]["f:containers"]['k:{"name":"web"}']
    assert container["."] == {} and container["f:image"] == {}
    assert 'k:{"containerPort":80,"protocol":"TCP"}' in container["f:ports"]
    assert "f:status" not in fields and "f:name" not in fields.get("f:metadata", {})

    second = kubectl.run("apply", "--server-side", "-n", ns, "-f", "-", input=yaml.safe_dump(deployment("web")))
    assert "deployment.apps/web serverside-applied" in second.stdout
    again = stored(kubectl, ns, "web")
    assert again["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert again["metadata"]["managedFields"] == created["metadata"]["managedFields"]

    hidden = json.loads(kubectl.run("get", "deployment", "web", "-n", ns, "-o", "json").stdout)
    assert "managedFields" not in hidden["metadata"]  # kubectl strips them unless asked


def test_kubectl_1_20_applies_server_side_too(apiserver: Endpoint, kubectl: Kubectl, ns: str, tmp_path: Path) -> None:
    binary = KUBECTLS["1.20"]
    if not os.access(binary, os.X_OK):
        unavailable("kubectl 1.20", f"{binary} is missing (install.sh unpacks 1.20)")
    old = Kubectl(binary, apiserver.kubeconfig, str(tmp_path / "kube-cache-1.20"))
    for _ in range(2):
        applied = old.run("apply", "--server-side", "-n", ns, "-f", "-", input=yaml.safe_dump(deployment("old")))
        assert "deployment.apps/old serverside-applied" in applied.stdout
    assert ("kubectl", "Apply") in entries(stored(kubectl, ns, "old"))


def test_conflicting_manager_is_refused_and_force_takes_over(kubectl: Kubectl, ns: str) -> None:
    kubectl.run("apply", "--server-side", "-n", ns, "-f", "-", input=yaml.safe_dump(deployment("api")))
    other = kubectl.run("apply", "--server-side", "--field-manager=ops", "-n", ns, "-f", "-",
                        input=yaml.safe_dump(deployment("api", replicas=5)), check=False)
    assert other.returncode != 0
    assert 'Apply failed with 1 conflict: conflict with "kubectl": .spec.replicas' in other.stderr, other.stderr
    assert stored(kubectl, ns, "api")["spec"]["replicas"] == 2

    forced = kubectl.run("apply", "--server-side", "--force-conflicts", "--field-manager=ops", "-n", ns, "-f", "-",
                         input=yaml.safe_dump(deployment("api", replicas=5)))
    assert "serverside-applied" in forced.stdout
    after = stored(kubectl, ns, "api")
    assert after["spec"]["replicas"] == 5
    owners = entries(after)
    assert "f:replicas" in owners[("ops", "Apply")]["fieldsV1"]["f:spec"]
    assert "f:replicas" not in owners[("kubectl", "Apply")]["fieldsV1"]["f:spec"]
    # the rest is shared: both applied the same values
    assert "f:selector" in owners[("kubectl", "Apply")]["fieldsV1"]["f:spec"]

    # kubectl now no longer sets replicas: it is not removed, ops still owns it
    without = deployment("api")
    del without["spec"]["replicas"]
    kubectl.run("apply", "--server-side", "-n", ns, "-f", "-", input=yaml.safe_dump(without))
    assert stored(kubectl, ns, "api")["spec"]["replicas"] == 5


def test_fields_the_applier_drops_are_removed(kubectl: Kubectl, ns: str) -> None:
    kubectl.run("apply", "--server-side", "-n", ns, "-f", "-",
                input=yaml.safe_dump(deployment("lab", labels={"team": "a", "tier": "web"})))
    kubectl.run("label", "-n", ns, "deployment", "lab", "owner=me")
    kubectl.run("apply", "--server-side", "-n", ns, "-f", "-",
                input=yaml.safe_dump(deployment("lab", labels={"team": "a"})))
    after = stored(kubectl, ns, "lab")
    assert after["metadata"]["labels"] == {"team": "a", "owner": "me"}
    assert entries(after)[("kubectl-label", "Update")]["fieldsV1"] == {"f:metadata": {"f:labels": {"f:owner": {}}}}


def test_client_side_apply_upgrades_to_server_side_without_conflicts(kubectl: Kubectl, ns: str) -> None:
    kubectl.run("apply", "-n", ns, "-f", "-", input=yaml.safe_dump(deployment("up")))
    before = stored(kubectl, ns, "up")
    csa = entries(before)[("kubectl-client-side-apply", "Update")]
    assert "f:replicas" in csa["fieldsV1"]["f:spec"]

    upgraded = kubectl.run("apply", "--server-side", "-n", ns, "-f", "-",
                           input=yaml.safe_dump(deployment("up", replicas=4, image="nginx:1.27")))
    assert "serverside-applied" in upgraded.stdout
    after = stored(kubectl, ns, "up")
    assert after["spec"]["replicas"] == 4
    owners = entries(after)
    assert "f:replicas" in owners[("kubectl", "Apply")]["fieldsV1"]["f:spec"]
    left = owners.get(("kubectl-client-side-apply", "Update"), {}).get("fieldsV1", {})
    assert "f:replicas" not in left.get("f:spec", {})
    last = json.loads(after["metadata"]["annotations"][LAST_APPLIED])
    assert last["spec"]["replicas"] == 4  # upstream keeps the annotation in step with the apply


def test_create_and_edit_record_update_managers(kubectl: Kubectl, ns: str) -> None:
    kubectl.run("create", "configmap", "cfg", "-n", ns, "--from-literal=a=1")
    kubectl.run("patch", "configmap", "cfg", "-n", ns, "-p", '{"data":{"b":"2"}}')
    got = json.loads(kubectl.run("get", "configmap", "cfg", "-n", ns, "-o", "json",
                                 "--show-managed-fields").stdout)
    owners = entries(got)
    assert owners[("kubectl-create", "Update")]["fieldsV1"] == {"f:data": {".": {}, "f:a": {}}}
    assert owners[("kubectl-patch", "Update")]["fieldsV1"] == {"f:data": {"f:b": {}}}
    assert owners[("kubectl-create", "Update")]["time"].endswith("Z")


# -- the official Python client -----------------------------------------------------------------------

@pytest.fixture
def api_client(apiserver: Endpoint) -> Iterator[client.ApiClient]:
    api = config.new_client_from_config(config_file=apiserver.kubeconfig)
    try:
        yield api
    finally:
        api.close()


def test_python_client_create_from_yaml_with_apply(api_client: client.ApiClient, tmp_path: Path) -> None:
    v1 = client.CoreV1Api(api_client)
    namespace = f"py-{uuid.uuid4().hex[:8]}"
    v1.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
    manifest = tmp_path / "app.yaml"
    objects = [deployment("py", replicas=1),
               {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "py"}, "data": {"k": "v"}}]
    manifest.write_text(yaml.safe_dump_all(objects))
    utils.create_from_yaml(api_client, str(manifest), namespace=namespace, apply=True)
    objects[0]["spec"]["replicas"] = 3
    manifest.write_text(yaml.safe_dump_all(objects))
    utils.create_from_yaml(api_client, str(manifest), namespace=namespace, apply=True)

    apps = client.AppsV1Api(api_client)
    deployed = apps.read_namespaced_deployment("py", namespace)
    assert deployed.spec.replicas == 3
    managers = {(e.manager, e.operation) for e in deployed.metadata.managed_fields}
    assert managers == {("python-client", "Apply")}

    # the typed API with the apply content type; a missing field manager is upstream's 422
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "py"}, "data": {"k": "other"}}
    with pytest.raises(ApiException) as refused:
        v1.patch_namespaced_config_map("py", namespace, body, _content_type="application/apply-patch+yaml")
    assert refused.value.status == 422
    assert "fieldManager: Required value: is required for apply patch" in json.loads(refused.value.body)["message"]
    with pytest.raises(ApiException) as conflict:
        v1.patch_namespaced_config_map("py", namespace, body, field_manager="tool",
                                       _content_type="application/apply-patch+yaml")
    assert conflict.value.status == 409
    status = json.loads(conflict.value.body)
    assert status["reason"] == "Conflict"
    assert status["message"] == 'Apply failed with 1 conflict: conflict with "python-client": .data.k'
    assert status["details"]["causes"] == [{"reason": "FieldManagerConflict", "message":
                                            'conflict with "python-client"', "field": ".data.k"}]
    forced = v1.patch_namespaced_config_map("py", namespace, body, field_manager="tool", force=True,
                                            _content_type="application/apply-patch+yaml")
    assert forced.data == {"k": "other"}

    # a field the kind does not declare: upstream's typed conversion refuses the whole configuration
    with pytest.raises(ApiException) as untyped:
        v1.patch_namespaced_config_map("py", namespace, {**body, "metadata": {"name": "py", "namespace": namespace},
                                                         "dat": {}},
                                       field_manager="tool", _content_type="application/apply-patch+yaml")
    assert untyped.value.status == 500
    assert json.loads(untyped.value.body)["message"] == (
        f"failed to create typed patch object ({namespace}/py; /v1, Kind=ConfigMap): .dat: field not declared in "
        "schema")
