"""End-to-end with the real kubectl binaries (1.20 reads /openapi/v2 as protobuf, 1.33 reads /openapi/v3):
`explain` prints fields and descriptions, `diff` shows a change through server-side dry-run without storing
it, and a manifest with an unknown field is warned about (Warn, the server's default), refused (Strict,
1.33's default, or 1.20's client-side validation against the served schemas) and never stored."""

from __future__ import annotations

import json
import uuid

import pytest
import yaml

from tests.e2e.conftest import Kubectl


@pytest.fixture
def ns(kubectl: Kubectl) -> str:
    name = f"oa-{uuid.uuid4().hex[:8]}"
    kubectl.run("create", "namespace", name)
    return name


def is_120(kubectl: Kubectl) -> bool:
    return "1.20" in kubectl.binary


def test_explain_prints_fields_and_descriptions(kubectl: Kubectl) -> None:
    out = kubectl.run("explain", "pods.spec.containers").stdout
    assert "KIND:" in out and "Pod" in out
    assert "List of containers belonging to the pod." in out  # the field's description
    assert "image\t<string>" in out and "Container image name." in out  # a field of Container
    deeper = kubectl.run("explain", "deployments.spec.strategy").stdout
    assert "rollingUpdate" in deeper and "Type of deployment. Can be" in deeper


def test_diff_shows_a_change_and_stores_nothing(kubectl: Kubectl, ns: str) -> None:
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": ns},
              "data": {"mode": "slow"}}
    kubectl.run("apply", "-f", "-", input=yaml.safe_dump(config))
    config["data"]["mode"] = "fast"
    diff = kubectl.run("diff", "-f", "-", input=yaml.safe_dump(config), check=False)
    assert diff.returncode == 1, diff.stderr  # 1: differences found (0 none, >1 an error)
    assert "-  mode: slow" in diff.stdout and "+  mode: fast" in diff.stdout
    stored = json.loads(kubectl.run("get", "configmap", "settings", "-n", ns, "-o", "json").stdout)
    assert stored["data"] == {"mode": "slow"}
    same = kubectl.run("diff", "-f", "-", input=yaml.safe_dump({**config, "data": {"mode": "slow"}}), check=False)
    assert same.returncode == 0 and same.stdout == ""


def pod_with_unknown_field(ns: str) -> str:
    return yaml.safe_dump({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "odd", "namespace": ns},
                           "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}], "foo": "bar"}})


def test_unknown_field_warned_refused_and_never_stored(kubectl: Kubectl, ns: str) -> None:
    manifest = pod_with_unknown_field(ns)
    if is_120(kubectl):
        # 1.20 validates on the client against the served schema, then (validation off) the server warns
        refused = kubectl.run("apply", "-f", "-", input=manifest, check=False)
        assert refused.returncode != 0
        assert 'unknown field "foo" in io.k8s.api.core.v1.PodSpec' in refused.stderr
        warned = kubectl.run("apply", "--validate=false", "-f", "-", input=manifest)
    else:
        refused = kubectl.run("apply", "--validate=strict", "-f", "-", input=manifest, check=False)
        assert refused.returncode != 0
        assert ('Error from server (BadRequest): error when creating "STDIN": Pod in version "v1" cannot be '
                'handled as a Pod: strict decoding error: unknown field "spec.foo"') in refused.stderr
        warned = kubectl.run("apply", "--validate=warn", "-f", "-", input=manifest)
    assert 'Warning: unknown field "spec.foo"' in warned.stderr
    assert "pod/odd created" in warned.stdout
    stored = json.loads(kubectl.run("get", "pod", "odd", "-n", ns, "-o", "json").stdout)
    assert "foo" not in stored["spec"]
