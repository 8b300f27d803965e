"""PodSecurity admission through the real registry (control/apiserver/admission/podsecurity.py): enforce,
warn and audit labels, workloads, namespace label checks and updates, exemptions, the configuration file."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest

from control.api.podsecurity.policy import LevelVersion, Policy
from control.apiserver import warning
from control.apiserver.admission import config as admission_config
from control.apiserver.admission.chain import Attributes, Operation
from control.apiserver.admission.podsecurity import Configuration, PodSecurity
from control.apiserver.authentication.tokens import UserInfo, current_user
from control.apiserver.registry.store import Registry
from control.apiserver.resources import by_path
from control.apiserver.status import APIError
from control.storage.sqlite import SQLiteStorage

PODS = by_path("", "v1", "pods")
NAMESPACES = by_path("", "v1", "namespaces")
SERVICE_ACCOUNTS = by_path("", "v1", "serviceaccounts")
DEPLOYMENTS = by_path("apps", "v1", "deployments")
PRIVILEGED_REFUSAL = ('pods "p" is forbidden: violates PodSecurity "restricted:latest": privileged (container "c" '
                      'must not set securityContext.privileged=true), allowPrivilegeEscalation != false (container '
                      '"c" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities '
                      '(container "c" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod '
                      'or container "c" must set securityContext.runAsNonRoot=true), seccompProfile (pod or '
                      'container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or '
                      '"Localhost")')


def make_registry(tmp_path: Any, configuration: Configuration | None = None) -> Iterator[Registry]:
    storage = SQLiteStorage(str(tmp_path / "state.db"))
    try:
        yield Registry(storage, admission_config=admission_config.AdmissionConfig(configuration or Configuration()))
    finally:
        storage.close()


@pytest.fixture
def registry(tmp_path: Any) -> Iterator[Registry]:
    yield from make_registry(tmp_path)


def namespace(registry: Registry, name: str, **labels: str) -> None:
    registry.create(NAMESPACES, "", {"metadata": {"name": name, "labels": {
        f"pod-security.kubernetes.io/{k.replace('_', '-')}": v for k, v in labels.items()}}})
    registry.create(SERVICE_ACCOUNTS, name, {"metadata": {"name": "default"}})  # the controller's


def pod(name: str = "p", *, privileged: bool = True, image: str = "busybox:1") -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"containers": [
        {"name": "c", "image": image, "securityContext": {"privileged": privileged}}]}}


def test_enforce_refuses_with_upstreams_message(registry: Registry) -> None:
    namespace(registry, "locked", enforce="restricted")
    with pytest.raises(APIError) as refused:
        registry.create(PODS, "locked", pod())
    assert refused.value.code == 403
    assert refused.value.status["message"] == PRIVILEGED_REFUSAL
    assert registry.get(PODS, "locked", "p") is None


def test_baseline_at_a_version_allows_what_restricted_refuses(registry: Registry) -> None:
    namespace(registry, "base", enforce="baseline", enforce_version="v1.29")
    registry.create(PODS, "base", pod(privileged=False))
    with pytest.raises(APIError, match=r'violates PodSecurity "baseline:v1.29": privileged \(container "c"'):
        registry.create(PODS, "base", pod("q"))


def test_warn_and_audit_do_not_refuse(registry: Registry) -> None:
    namespace(registry, "soft", warn="baseline", audit="restricted")
    with warning.recording() as recorded:
        registry.create(PODS, "soft", pod())
    assert recorded.warnings == ['would violate PodSecurity "baseline:latest": privileged (container "c" must not '
                                 'set securityContext.privileged=true)']
    attributes = Attributes(Operation.CREATE, PODS, "soft", "q", pod("q"))
    PodSecurity(registry).validate(attributes, ExitStack())
    assert attributes.annotations["pod-security.kubernetes.io/audit-violations"].startswith(
        'would violate PodSecurity "restricted:latest": privileged')
    assert attributes.annotations["pod-security.kubernetes.io/enforce-policy"] == "privileged:latest"


def test_enforce_label_also_warns_by_default(registry: Registry) -> None:
    """Without a warn label, warn follows a stricter enforce level (upstream PolicyToEvaluate): a workload in an
    enforcing namespace gets the warning though only pods are refused."""
    namespace(registry, "locked", enforce="baseline")
    deployment = {"metadata": {"name": "d"}, "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {
        "metadata": {"labels": {"a": "b"}}, "spec": pod()["spec"]}}}
    with warning.recording() as recorded:
        registry.create(DEPLOYMENTS, "locked", deployment)
    assert recorded.warnings == ['would violate PodSecurity "baseline:latest": privileged (container "c" must not '
                                 'set securityContext.privileged=true)']


def test_pod_updates_checked_only_when_an_image_changes(registry: Registry) -> None:
    namespace(registry, "ns")
    registry.create(PODS, "ns", pod())
    registry.patch(NAMESPACES, "", "ns", "merge", {"metadata": {"labels": {
        "pod-security.kubernetes.io/enforce": "baseline"}}})
    registry.patch(PODS, "ns", "p", "merge", {"metadata": {"labels": {"x": "y"}}})  # not significant
    with pytest.raises(APIError, match="violates PodSecurity"):
        registry.patch(PODS, "ns", "p", "strategic", {"spec": {"containers": [{"name": "c", "image": "busybox:2"}]}})


def test_invalid_labels_are_refused_on_the_namespace(registry: Registry) -> None:
    with pytest.raises(APIError) as refused:
        namespace(registry, "bad", enforce="strict")
    assert refused.value.code == 422
    assert refused.value.status["message"] == (
        'Namespace "bad" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "strict": '
        "must be one of privileged, baseline, restricted")


def test_tightening_a_namespace_warns_about_existing_pods(registry: Registry) -> None:
    namespace(registry, "ns")
    for name in ("b", "a", "c"):
        registry.create(PODS, "ns", pod(name))
    registry.create(PODS, "ns", pod("fine", privileged=False))
    with warning.recording() as recorded:
        registry.patch(NAMESPACES, "", "ns", "merge", {"metadata": {"labels": {
            "pod-security.kubernetes.io/enforce": "baseline"}}})
    assert recorded.warnings == [
        'existing pods in namespace "ns" violate the new PodSecurity enforce level "baseline:latest"',
        "a (and 2 other pods): privileged"]
    with warning.recording() as recorded:  # loosening says nothing
        registry.patch(NAMESPACES, "", "ns", "merge", {"metadata": {"labels": {
            "pod-security.kubernetes.io/enforce": "privileged"}}})
    assert recorded.warnings == []


def test_exemptions_and_defaults(tmp_path: Any) -> None:
    configuration = Configuration(defaults=Policy(enforce=LevelVersion("baseline")), usernames=frozenset({"ops"}),
                                  runtime_classes=frozenset({"kata"}), namespaces=frozenset({"kube-system"}))
    for registry in make_registry(tmp_path, configuration):
        namespace(registry, "default")
        namespace(registry, "kube-system")
        with pytest.raises(APIError, match=r'violates PodSecurity "baseline:latest"'):
            registry.create(PODS, "default", pod())
        registry.create(PODS, "kube-system", pod())
        kata = pod("kata")
        kata["spec"]["runtimeClassName"] = "kata"
        registry.create(PODS, "default", kata)
        token = current_user.set(UserInfo("ops"))
        try:
            registry.create(PODS, "default", pod("by-ops"))
        finally:
            current_user.reset(token)
        with warning.recording() as recorded:
            namespace(registry, "exempt-later")
            registry.patch(NAMESPACES, "", "kube-system", "merge", {"metadata": {"labels": {
                "pod-security.kubernetes.io/enforce": "restricted"}}})
        assert recorded.warnings == ['namespace "kube-system" is exempt from Pod Security, and the policy '
                                     "(enforce=restricted:latest) will be ignored"]


def test_configuration_file(tmp_path: Any) -> None:
    (tmp_path / "psa.yaml").write_text(
        "apiVersion: pod-security.admission.config.k8s.io/v1\nkind: PodSecurityConfiguration\n"
        "defaults: {enforce: baseline, enforce-version: v1.29, warn: restricted}\n"
        "exemptions: {usernames: [ops], namespaces: [kube-system]}\n")
    (tmp_path / "admission.yaml").write_text(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\n"
        "plugins:\n- name: PodSecurity\n  path: psa.yaml\n- name: SomethingElse\n  configuration: {}\n")
    loaded = admission_config.load(str(tmp_path / "admission.yaml")).pod_security
    assert str(loaded.defaults.enforce) == "baseline:v1.29"
    assert str(loaded.defaults.warn) == "restricted:latest" and loaded.defaults.audit.level == "privileged"
    assert loaded.usernames == {"ops"} and loaded.namespaces == {"kube-system"}
    (tmp_path / "psa.yaml").write_text(
        "apiVersion: pod-security.admission.config.k8s.io/v1\nkind: PodSecurityConfiguration\n"
        "defaults: {enforce: strict}\n")
    with pytest.raises(ValueError, match="defaults.enforce: must be one of privileged, baseline, restricted"):
        admission_config.load(str(tmp_path / "admission.yaml"))
    assert admission_config.load(None).pod_security == Configuration()
