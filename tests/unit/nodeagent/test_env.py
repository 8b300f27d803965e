"""Container environment resolution (nodeagent/runtime/env.py, expansion.py, downward.py) against fakes."""

from __future__ import annotations

import pytest

from nodeagent.runtime.docker import docker_env
from nodeagent.runtime.downward import DownwardAPIError, NodeFacts, field_value, resource_value
from nodeagent.runtime.env import CreateContainerConfigError, make_environment
from nodeagent.runtime.expansion import expand, mapping_for
from tests.support.fake_objects import FakeObjects

POD = {
    "metadata": {"name": "web", "namespace": "ns1", "uid": "u-1", "labels": {"app": "web", "tier": "a b"},
                 "annotations": {"note": 'say "hi"'}},
    "spec": {"nodeName": "node-a", "serviceAccountName": "sa", "containers": [
        {"name": "c", "resources": {"limits": {"cpu": "500m", "memory": "64Mi"}, "requests": {"cpu": "250m"}}},
        {"name": "other", "resources": {"limits": {"memory": "1Gi"}}},
    ]},
}


def env_of(container, getter=None, **kw):
    return make_environment(POD, container, getter or FakeObjects(), **kw)


@pytest.mark.parametrize(("text", "context", "expected"), [
    pytest.param("$(A)", {"A": "1"}, "1", id="simple"),
    pytest.param("x$(A)y$(B)", {"A": "1", "B": "2"}, "x1y2", id="two"),
    pytest.param("$(MISSING)", {}, "$(MISSING)", id="unknown-kept"),
    pytest.param("$$(A)", {"A": "1"}, "$(A)", id="escaped"),
    pytest.param("$$$(A)", {"A": "1"}, "$1", id="escaped-then-ref"),
    pytest.param("$(A", {"A": "1"}, "$(A", id="unclosed"),
    pytest.param("$A", {"A": "1"}, "$A", id="no-paren"),
    pytest.param("a$", {}, "a$", id="trailing-operator"),
    pytest.param("$()", {"": "e"}, "e", id="empty-name"),
    pytest.param("$(A)", {"A": "$(B)", "B": "2"}, "$(B)", id="one-pass"),
    pytest.param("", {}, "", id="empty"),
])
def test_expand(text, context, expected):
    assert expand(text, mapping_for(context)) == expected


def test_value_expansion_sees_earlier_vars_only():
    env = env_of({"env": [
        {"name": "A", "value": "a"},
        {"name": "B", "value": "$(A)-$(C)"},
        {"name": "C", "value": "c"},
        {"name": "D", "value": "$(C)$$(C)"},
    ]})
    assert env.as_dict() == {"A": "a", "B": "a-$(C)", "C": "c", "D": "c$(C)"}
    assert docker_env(env.variables) == ["A=a", "B=a-$(C)", "C=c", "D=c$(C)"]


@pytest.mark.parametrize(("path", "expected"), [
    ("metadata.name", "web"),
    ("metadata.namespace", "ns1"),
    ("metadata.uid", "u-1"),
    ("metadata.labels['app']", "web"),
    ("metadata.labels['missing']", ""),
    ('metadata.annotations["note"]', 'say "hi"'),
    ("metadata.labels", 'app="web"\ntier="a b"'),
    ("metadata.annotations", 'note="say \\"hi\\""'),
    ("spec.nodeName", "node-a"),
    ("spec.serviceAccountName", "sa"),
    ("status.podIP", "10.244.0.5"),
    ("status.podIPs", "10.244.0.5,fd00::5"),
    ("status.hostIP", "192.168.1.2"),
    ("spec.terminationGracePeriodSeconds", "30"),
])
def test_field_ref(path, expected):
    node = NodeFacts(host_ips=("192.168.1.2",))
    assert field_value(POD, path, pod_ips=("10.244.0.5", "fd00::5"), node=node) == expected


def test_field_ref_unsupported_is_a_config_error():
    with pytest.raises(DownwardAPIError, match="unsupported fieldPath: status.phase"):
        field_value(POD, "status.phase")
    with pytest.raises(CreateContainerConfigError, match="unsupported fieldPath"):
        env_of({"env": [{"name": "X", "valueFrom": {"fieldRef": {"fieldPath": "spec.bogus"}}}]})


@pytest.mark.parametrize(("resource", "divisor", "container", "expected"), [
    pytest.param("limits.cpu", None, 0, "1", id="cpu-ceil"),
    pytest.param("limits.cpu", "1m", 0, "500", id="cpu-milli"),
    pytest.param("requests.cpu", "1m", 0, "250", id="request"),
    pytest.param("limits.memory", None, 0, str(64 * 2**20), id="memory-bytes"),
    pytest.param("limits.memory", "1Mi", 0, "64", id="memory-divisor"),
    pytest.param("limits.memory", "1Gi", 0, "1", id="memory-ceil"),
    pytest.param("limits.cpu", None, 1, "4", id="unset-limit-is-allocatable"),
    pytest.param("requests.memory", None, 1, str(2**30), id="unset-request-is-limit"),
    pytest.param("requests.cpu", None, 1, "0", id="unset-request-no-limit"),
    pytest.param("limits.cpu", "0", 0, "1", id="zero-divisor-is-one"),
])
def test_resource_field_ref(resource, divisor, container, expected):
    node = NodeFacts(allocatable={"cpu": "4", "memory": "8Gi"})
    selector = {"resource": resource} | ({"divisor": divisor} if divisor else {})
    assert resource_value(selector, POD["spec"]["containers"][container], pod=POD, node=node) == expected


def test_resource_field_ref_other_container_and_bad_resource():
    assert resource_value({"resource": "limits.memory", "containerName": "other", "divisor": "1Mi"},
                          POD["spec"]["containers"][0], pod=POD) == "1024"
    with pytest.raises(DownwardAPIError, match="unsupported container resource : limits.gpu"):
        resource_value({"resource": "limits.gpu"}, {})


def test_configmap_and_secret_key_refs():
    getter = FakeObjects(configmaps={("ns1", "cfg"): {"k": "v"}}, secrets={("ns1", "s"): {"pw": "sekret"}})
    env = env_of({"env": [
        {"name": "A", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "k"}}},
        {"name": "B", "valueFrom": {"secretKeyRef": {"name": "s", "key": "pw"}}},
        {"name": "C", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "k"}}},
    ]}, getter)
    assert env.as_dict() == {"A": "v", "B": "sekret", "C": "v"}
    assert getter.calls.count(("cm", "ns1", "cfg")) == 1  # fetched once per container, as upstream


@pytest.mark.parametrize(("ref", "message"), [
    pytest.param({"configMapKeyRef": {"name": "cfg", "key": "nope"}}, "couldn't find key nope in ConfigMap ns1/cfg",
                 id="cm-key"),
    pytest.param({"secretKeyRef": {"name": "s", "key": "nope"}}, "couldn't find key nope in Secret ns1/s",
                 id="secret-key"),
    pytest.param({"configMapKeyRef": {"name": "gone", "key": "k"}}, 'configmaps "gone" not found', id="cm-object"),
    pytest.param({"secretKeyRef": {"name": "gone", "key": "k"}}, 'secrets "gone" not found', id="secret-object"),
])
def test_missing_refs_fail_unless_optional(ref, message):
    getter = FakeObjects(configmaps={("ns1", "cfg"): {"k": "v"}}, secrets={("ns1", "s"): {"pw": "x"}})
    with pytest.raises(CreateContainerConfigError) as info:
        env_of({"env": [{"name": "X", "valueFrom": ref}]}, getter)
    assert str(info.value) == message
    assert info.value.reason == "CreateContainerConfigError"
    optional = {kind: dict(body, optional=True) for kind, body in ref.items()}
    env = env_of({"envFrom": [{"configMapRef": {"name": "cfg"}}],
                  "env": [{"name": "k", "value": "kept"}, {"name": "X", "valueFrom": optional}]}, getter)
    assert env.as_dict() == {"k": "kept"}


def test_env_from_prefix_override_and_invalid_keys():
    getter = FakeObjects(
        configmaps={("ns1", "cfg"): {"A": "1", "B": "2", "1bad": "x", "ok.dotted-name": "y"}},
        secrets={("ns1", "s"): {"B": "from-secret", "bad key": "z"}},
    )
    env = env_of({
        "envFrom": [{"configMapRef": {"name": "cfg"}}, {"secretRef": {"name": "s"}, "prefix": "S_"},
                    {"configMapRef": {"name": "missing", "optional": True}}],
        "env": [{"name": "A", "value": "override $(B)"}],
    }, getter)
    assert env.as_dict() == {"A": "override 2", "B": "2", "ok.dotted-name": "y", "S_B": "from-secret"}
    assert [(w.reason, w.message) for w in env.warnings] == [
        ("InvalidEnvironmentVariableNames", "Keys [1bad] from the EnvFrom configMap ns1/cfg were skipped since "
         "they are considered invalid environment variable names."),
        ("InvalidEnvironmentVariableNames", "Keys [S_bad key] from the EnvFrom secret ns1/s were skipped since "
         "they are considered invalid environment variable names."),
    ]


def test_env_from_missing_object_fails():
    with pytest.raises(CreateContainerConfigError, match='configmaps "nope" not found'):
        env_of({"envFrom": [{"configMapRef": {"name": "nope"}}]})


def test_downward_env_values():
    env = env_of({"name": "c", "resources": POD["spec"]["containers"][0]["resources"], "env": [
        {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        {"name": "MEM", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}}},
        {"name": "EMPTY"},
    ]}, pod_ips=("10.1.2.3",))
    assert env.as_dict() == {"POD_IP": "10.1.2.3", "MEM": "64", "EMPTY": ""}
