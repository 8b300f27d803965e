"""managedFields as upstream keeps them: Update entries for ordinary writes, Apply with merge, removal of
dropped fields, conflicts with upstream's messages, force, before-first-apply and the upgrade from
client-side apply."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from control.apiserver.fieldmanager import managedfields as mf
from control.apiserver.fieldmanager.fieldschema import schema

T0 = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
T1 = T0 + timedelta(minutes=1)
S = schema()
DEPLOYMENTS = mf.Context(S, S.root("apps/v1", "Deployment"), "apps/v1", reset=frozenset({("f:status",)}))
CONFIGMAPS = mf.Context(S, S.root("v1", "ConfigMap"), "v1")


def deployment(replicas: int | None = 2, *, image: str = "nginx", labels: dict[str, str] | None = None,
               **metadata: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"selector": {"matchLabels": {"app": "w"}},
                            "template": {"metadata": {"labels": {"app": "w"}},
                                         "spec": {"containers": [{"name": "web", "image": image}]}}}
    if replicas is not None:
        spec["replicas"] = replicas
    meta: dict[str, Any] = {"name": "w", "namespace": "d", **metadata}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta, "spec": spec}


def stored(obj: dict[str, Any], uid: str = "u1") -> dict[str, Any]:
    """What the registry hands back: the object as written, with a uid."""
    result = copy.deepcopy(obj)
    result["metadata"]["uid"] = uid
    return result


def owners(obj: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(e["manager"], e["operation"]): e["fieldsV1"] for e in obj["metadata"].get("managedFields", [])}


def apply(live: dict[str, Any] | None, config: dict[str, Any], manager: str = "kubectl", *, force: bool = False,
          now: datetime = T0) -> dict[str, Any]:
    return stored(mf.apply(live, config, DEPLOYMENTS, manager=manager, force=force, now=now))


# --- Update ----------------------------------------------------------------------------------------

def test_create_owns_what_it_sent_with_markers_where_go_had_nothing() -> None:
    created = mf.update(None, {"kind": "Deployment", **deployment(labels={"a": "b"})}, DEPLOYMENTS,
                        manager="kubectl-create", now=T0)
    entry = created["metadata"]["managedFields"][0]
    assert {k: v for k, v in entry.items() if k != "fieldsV1"} == {
        "manager": "kubectl-create", "operation": "Update", "apiVersion": "apps/v1", "time": "2026-01-02T03:04:05Z",
        "fieldsType": "FieldsV1"}
    assert entry["fieldsV1"] == {
        "f:metadata": {"f:labels": {".": {}, "f:a": {}}},
        "f:spec": {"f:replicas": {}, "f:selector": {},
                   "f:template": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                                  "f:spec": {"f:containers": {'k:{"name":"web"}': {".": {}, "f:image": {},
                                                                                    "f:name": {}}}}}}}


def test_update_takes_changed_fields_from_others_and_merges_the_same_manager() -> None:
    live = stored(mf.update(None, deployment(), DEPLOYMENTS, manager="create", now=T0))
    scaled = stored(mf.update(live, {**live, "spec": {**live["spec"], "replicas": 5}}, DEPLOYMENTS,
                              manager="scaler", now=T1))
    assert owners(scaled)[("scaler", "Update")] == {"f:spec": {"f:replicas": {}}}
    assert "f:replicas" not in owners(scaled)[("create", "Update")]["f:spec"]
    again = copy.deepcopy(scaled)
    again["metadata"]["labels"] = {"x": "y"}
    merged = mf.update(scaled, again, DEPLOYMENTS, manager="scaler", now=T1)
    assert owners(merged)[("scaler", "Update")] == {"f:metadata": {"f:labels": {".": {}, "f:x": {}}},
                                                    "f:spec": {"f:replicas": {}}}


def test_a_write_without_a_manager_name_is_recorded_as_unknown() -> None:
    created = mf.update(None, deployment(), DEPLOYMENTS, manager="", now=T0)
    assert [e["manager"] for e in created["metadata"]["managedFields"]] == ["unknown"]


def test_update_that_changes_nothing_leaves_managed_fields_alone() -> None:
    live = stored(mf.update(None, deployment(), DEPLOYMENTS, manager="create", now=T0))
    assert mf.update(live, copy.deepcopy(live), DEPLOYMENTS, manager="other", now=T1) == live


def test_removing_a_field_drops_it_from_its_owner_and_empty_managers_go() -> None:
    live = stored(mf.update(None, {"metadata": {"name": "c"}, "data": {"a": "1"}}, CONFIGMAPS, manager="one",
                            now=T0))
    emptied = mf.update(live, {"metadata": live["metadata"]}, CONFIGMAPS, manager="two", now=T1)
    assert "managedFields" not in emptied["metadata"]


def test_existing_object_without_managed_fields_is_not_tracked_by_an_update() -> None:
    live = stored(deployment())
    assert "managedFields" not in mf.update(live, deployment(3), DEPLOYMENTS, manager="x", now=T0)["metadata"]


@pytest.mark.parametrize("sent", [[], [{}]])
def test_client_can_clear_managed_fields(sent: list[Any]) -> None:
    live = stored(mf.update(None, deployment(), DEPLOYMENTS, manager="create", now=T0))
    cleared = mf.update(live, {**live, "metadata": {**live["metadata"], "managedFields": sent}}, DEPLOYMENTS,
                        manager="x", now=T1)
    assert "managedFields" not in cleared["metadata"]


def test_undecodable_managed_fields_from_a_client_are_ignored() -> None:
    live = stored(mf.update(None, deployment(), DEPLOYMENTS, manager="create", now=T0))
    bogus = {**live, "metadata": {**live["metadata"], "managedFields": [{"manager": "x", "fieldsType": "Nope"}]}}
    assert mf.update(live, bogus, DEPLOYMENTS, manager="create", now=T1)["metadata"]["managedFields"] == \
        live["metadata"]["managedFields"]


# --- Apply -----------------------------------------------------------------------------------------

def test_apply_creates_and_a_second_identical_apply_is_a_no_op() -> None:
    first = apply(None, deployment())
    assert owners(first)[("kubectl", "Apply")]["f:spec"]["f:replicas"] == {}
    assert first["metadata"]["managedFields"][0]["time"] == "2026-01-02T03:04:05Z"
    assert mf.apply(first, deployment(), DEPLOYMENTS, manager="kubectl", force=False, now=T1) is first


def test_apply_conflict_message_and_causes() -> None:
    live = apply(None, deployment())
    with pytest.raises(mf.ApplyConflict) as one:
        apply(live, deployment(5, image="other"), "ops")
    assert one.value.message == ('Apply failed with 2 conflicts: conflicts with "kubectl":\n- .spec.replicas\n'
                                 '- .spec.template.spec.containers[name="web"].image')
    updated = stored(mf.update(live, deployment(7), DEPLOYMENTS, manager="hpa", now=T1))
    with pytest.raises(mf.ApplyConflict) as single:
        apply(updated, deployment(5), "ops")
    assert single.value.message == ('Apply failed with 1 conflict: conflict with "hpa" using apps/v1: '
                                    ".spec.replicas")
    assert single.value.causes() == [{"reason": "FieldManagerConflict", "message": 'conflict with "hpa" using apps/v1',
                                      "field": ".spec.replicas"}]


def test_same_value_is_shared_without_conflict_and_force_takes_over() -> None:
    live = apply(None, deployment())
    shared = apply(live, deployment(), "ops")
    assert owners(shared)[("ops", "Apply")] == owners(shared)[("kubectl", "Apply")]
    forced = apply(shared, deployment(9), "ops", force=True, now=T1)
    assert forced["spec"]["replicas"] == 9
    assert "f:replicas" not in owners(forced)[("kubectl", "Apply")]["f:spec"]


def test_apply_removes_what_the_applier_dropped_unless_someone_else_owns_it() -> None:
    live = apply(None, deployment(labels={"a": "1", "b": "2"}))
    labelled = stored(mf.update(live, deployment(labels={"a": "1", "b": "2", "c": "3"}), DEPLOYMENTS,
                                manager="kubectl-label", now=T1))
    shared = apply(labelled, deployment(None, labels={"b": "2"}), "other")
    dropped = apply(shared, deployment(None, labels={"a": "1"}), now=T1)
    assert dropped["metadata"]["labels"] == {"a": "1", "b": "2", "c": "3"}  # b: other owns it; c: the label
    assert "replicas" not in dropped["spec"]
    alone = apply(labelled, deployment(labels={"a": "1"}), now=T1)
    assert alone["metadata"]["labels"] == {"a": "1", "c": "3"}


def test_apply_ignores_reset_fields_and_refuses_managed_fields() -> None:
    with_status = {**deployment(), "status": {"replicas": 3}}
    assert "f:status" not in owners(apply(None, with_status))[("kubectl", "Apply")]
    with pytest.raises(mf.ApplyError, match="metadata.managedFields must be nil"):
        apply(None, deployment(managedFields=[]))


def test_first_apply_to_an_untracked_object_gives_the_rest_to_before_first_apply() -> None:
    legacy = stored(deployment(labels={"old": "1"}))
    applied = apply(legacy, deployment(labels={"new": "1"}))
    assert applied["metadata"]["labels"] == {"old": "1", "new": "1"}
    assert owners(applied)[("before-first-apply", "Update")]["f:metadata"] == {"f:labels": {".": {}, "f:old": {}}}
    with pytest.raises(mf.ApplyConflict, match='conflict with "before-first-apply" using apps/v1: .spec.replicas'):
        apply(legacy, deployment(4))


def test_kubectl_takes_over_from_client_side_apply_and_rewrites_the_annotation() -> None:
    last = json.dumps(deployment())
    created = stored(mf.update(None, deployment(annotations={mf.LAST_APPLIED: last}), DEPLOYMENTS,
                               manager="kubectl-client-side-apply", now=T0))
    upgraded = apply(created, deployment(4), now=T1)
    assert upgraded["spec"]["replicas"] == 4
    assert json.loads(upgraded["metadata"]["annotations"][mf.LAST_APPLIED]) == deployment(4)
    assert "f:replicas" not in owners(upgraded)[("kubectl-client-side-apply", "Update")]["f:spec"]
    with pytest.raises(mf.ApplyConflict):  # another manager name gets no such pass
        apply(created, deployment(4), "someone")


def test_encoding_orders_apply_before_update() -> None:
    live = stored(mf.update(None, deployment(), DEPLOYMENTS, manager="zz", now=T0))
    both = apply(live, deployment(labels={"n": "1"}), "aa", now=T1)
    assert [(e["manager"], e["operation"]) for e in both["metadata"]["managedFields"]] == [
        ("aa", "Apply"), ("zz", "Update")]


@pytest.mark.parametrize(
    ("agent", "manager"),
    [
        pytest.param("kubectl/v1.33.1 (linux/amd64) kubernetes/8adc0f0", "kubectl", id="kubectl"),
        pytest.param("OpenAPI-Generator/37.0.2/python", "OpenAPI-Generator", id="python"),
        pytest.param("a\tb/1", "ab", id="unprintable-dropped"),
        pytest.param("x" * 200, "x" * 128, id="capped"),
    ],
)
def test_manager_from_user_agent(agent: str, manager: str) -> None:
    assert mf.manager_from_user_agent(agent) == manager
