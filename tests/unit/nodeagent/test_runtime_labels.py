"""Names and labels of a pod's containers (nodeagent/runtime/labels.py) round-trip to the same identity."""

from __future__ import annotations

import pytest

from nodeagent.runtime import labels as L
from nodeagent.runtime.cri import PodSandboxMetadata
from tests.support.cri_configs import container_docker_labels, sandbox_docker_labels

POD = {
    "metadata": {"name": "web", "namespace": "prod", "uid": "0b6c-11"},
    "spec": {"terminationGracePeriodSeconds": 5},
}
CONTAINER = {
    "name": "app",
    "image": "slimkube/busybox:1",
    "terminationMessagePolicy": "FallbackToLogsOnError",
    "lifecycle": {"preStop": {"exec": {"command": ["sh", "-c", "sleep 1"]}}},
}


def test_names_follow_the_dockershim_scheme():
    assert L.make_name("app", L.sandbox_metadata(POD, 0), 3) == "k8s_app_web_prod_0b6c-11_3"
    assert L.sandbox_name(L.sandbox_metadata(POD, 0)) == "k8s_POD_web_prod_0b6c-11_0"
    assert L.sandbox_name(L.sandbox_metadata({"metadata": {"name": "p", "uid": "u"}}, 1)) == "k8s_POD_p_default_u_1"
    assert L.sandbox_metadata(POD, 4) == PodSandboxMetadata(name="web", uid="0b6c-11", namespace="prod", attempt=4)


@pytest.mark.parametrize(
    "name, expected",
    [
        pytest.param("/k8s_app_web_prod_0b6c-11_3", L.ParsedName("app", "web", "prod", "0b6c-11", 3), id="listed"),
        pytest.param("k8s_POD_web_prod_u_0_deadbeef", L.ParsedName("POD", "web", "prod", "u", 0), id="conflict-suffix"),
        pytest.param("/k8s_app_web_prod_u_x", None, id="attempt-not-int"),
        pytest.param("/nginx", None, id="not-ours"),
        pytest.param("/k9s_app_web_prod_u_1", None, id="wrong-prefix"),
    ],
)
def test_parse_name(name, expected):
    assert L.parse_name(name) == expected


def test_container_labels_round_trip_through_a_list_entry():
    labels = container_docker_labels(POD, CONTAINER, node="n1", sandbox_id="sb", attempt=2, spec_hash="abc",
                                     extra={"slimkube.test": "run1", L.POD_UID: "must-not-win"})
    assert labels["slimkube.test"] == "run1"
    assert labels[L.POD_UID] == "0b6c-11"
    assert labels[L.CONTAINER_TYPE] == "container"
    assert labels[L.NODE] == "n1"
    identity = L.parse_entry({"Id": "c1", "Names": ["/k8s_app_web_prod_0b6c-11_2"], "Labels": labels})
    assert identity == L.Identity(
        kind=L.Kind.CONTAINER, pod_uid="0b6c-11", pod_name="web", namespace="prod", container_name="app", attempt=2,
        sandbox_id="sb", hash="abc", grace_period=5, termination_message_path="/dev/termination-log",
        termination_message_policy="FallbackToLogsOnError",
        prestop={"exec": {"command": ["sh", "-c", "sleep 1"]}}, node="n1",
    )


def test_sandbox_labels_round_trip_through_an_inspect():
    labels = sandbox_docker_labels(POD, node="n1", attempt=4)
    identity = L.parse_entry({"Id": "s", "Name": "/k8s_POD_web_prod_0b6c-11_4", "Config": {"Labels": labels}})
    assert (identity.kind, identity.container_name, identity.attempt) == (L.Kind.SANDBOX, "POD", 4)
    assert identity.grace_period == 5
    assert labels[L.CONTAINER_TYPE] == "podsandbox"


def test_defaults_when_the_spec_leaves_fields_out():
    labels = container_docker_labels({"metadata": {"name": "p", "uid": "u"}}, {"name": "c"}, node="n", sandbox_id="s",
                                     attempt=0, spec_hash="h")
    identity = L.parse_labels(labels)
    assert identity.grace_period == 30 and identity.namespace == "default"
    assert identity.termination_message_path == "/dev/termination-log"
    assert identity.termination_message_policy == "File" and identity.prestop is None
    assert L.PRESTOP_HANDLER not in labels


@pytest.mark.parametrize(
    "entry",
    [
        pytest.param({"Names": ["/nginx"], "Labels": {}}, id="user-container"),
        pytest.param({"Names": ["/x"], "Labels": {L.POD_UID: "u", L.CONTAINER_TYPE: "weird"}}, id="unknown-type"),
        pytest.param({"Names": ["/x"], "Labels": {L.CONTAINER_TYPE: "container"}}, id="no-uid"),
    ],
)
def test_containers_that_are_not_a_pods_are_ignored(entry):
    assert L.parse_entry(entry) is None


def test_the_name_fills_in_for_missing_labels():
    identity = L.parse_entry({"Names": ["/k8s_app_web_prod_u_7"], "Labels": {}})
    assert (identity.kind, identity.pod_uid, identity.pod_name, identity.container_name, identity.attempt) == (
        L.Kind.CONTAINER, "u", "web", "app", 7)
    assert L.parse_entry({"Names": ["/k8s_POD_web_prod_u_1"], "Labels": {}}).kind is L.Kind.SANDBOX
