"""End-to-end: Pod Security and LimitRanger as the real kubectl binaries (1.33 and 1.20) see them against a
real API server: a `restricted` namespace refuses a privileged pod with upstream's message, a `warn`
namespace admits it and kubectl prints the `Warning:` line, `kubectl label` tightening a namespace warns
about its existing pods, and a LimitRange's default lands on a pod."""

from __future__ import annotations

import json
import uuid

import pytest
import yaml

from tests.e2e.conftest import Kubectl

PRIVILEGED_POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "root"}, "spec": {"containers": [
    {"name": "c", "image": "busybox:1.36", "securityContext": {"privileged": True}}]}}


@pytest.fixture
def ns(kubectl: Kubectl) -> str:
    name = f"e2e-{uuid.uuid4().hex[:8]}"
    assert f"namespace/{name} created" in kubectl.run("create", "namespace", name).stdout
    return name


def test_restricted_refuses_and_warn_warns(kubectl: Kubectl, ns: str) -> None:
    kubectl.run("label", "namespace", ns, "pod-security.kubernetes.io/enforce=restricted")
    refused = kubectl.run("apply", "-n", ns, "-f", "-", input=yaml.safe_dump(PRIVILEGED_POD), check=False)
    assert refused.returncode != 0
    assert ('pods "root" is forbidden: violates PodSecurity "restricted:latest": privileged (container "c" must '
            "not set securityContext.privileged=true), allowPrivilegeEscalation != false") in refused.stderr

    kubectl.run("label", "--overwrite", "namespace", ns, "pod-security.kubernetes.io/enforce=privileged",
                "pod-security.kubernetes.io/warn=baseline")
    warned = kubectl.run("apply", "-n", ns, "-f", "-", input=yaml.safe_dump(PRIVILEGED_POD))
    assert "pod/root created" in warned.stdout
    assert ('Warning: would violate PodSecurity "baseline:latest": privileged (container "c" must not set '
            "securityContext.privileged=true)") in warned.stderr

    tightened = kubectl.run("label", "--overwrite", "namespace", ns, "pod-security.kubernetes.io/enforce=baseline")
    assert (f'Warning: existing pods in namespace "{ns}" violate the new PodSecurity enforce level '
            '"baseline:latest"') in tightened.stderr
    assert "Warning: root: privileged" in tightened.stderr


def test_a_limit_range_default_lands_on_a_pod(kubectl: Kubectl, ns: str) -> None:
    limits = {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "defaults"}, "spec": {"limits": [
        {"type": "Container", "default": {"cpu": "500m", "memory": "128Mi"}, "defaultRequest": {"cpu": "100m"}}]}}
    assert "limitrange/defaults created" in kubectl.run("apply", "-n", ns, "-f", "-",
                                                        input=yaml.safe_dump(limits)).stdout
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "plain"},
           "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}}
    kubectl.run("apply", "-n", ns, "-f", "-", input=yaml.safe_dump(pod))
    stored = json.loads(kubectl.run("get", "pod", "plain", "-n", ns, "-o", "json").stdout)
    assert stored["spec"]["containers"][0]["resources"] == {"limits": {"cpu": "500m", "memory": "128Mi"},
                                                            "requests": {"cpu": "100m", "memory": "128Mi"}}
    assert stored["metadata"]["annotations"]["kubernetes.io/limit-ranger"] == \
        "LimitRanger plugin set: cpu, memory request for container c; cpu, memory limit for container c"
    assert "defaults" in kubectl.run("get", "limits", "-n", ns).stdout
