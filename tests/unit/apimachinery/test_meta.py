"""control.apimachinery.meta: metadata accessors, owner references, conditions, timestamps."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from control.apimachinery.meta import (
    annotations_of,
    controller_ref,
    deep_copy,
    format_timestamp,
    get_condition,
    group_version,
    is_controlled_by,
    key_of,
    labels_of,
    name_of,
    namespace_of,
    new_controller_ref,
    owner_references,
    parse_timestamp,
    set_condition,
    split_key,
)

POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "web-0",
        "namespace": "prod",
        "uid": "pod-uid",
        "labels": {"app": "web"},
        "annotations": {"note": "x"},
        "ownerReferences": [
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": "cm-uid"},
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "rs-uid", "controller": True},
        ],
    },
}
NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1", "uid": "node-uid"}}


def test_accessors() -> None:
    assert (name_of(POD), namespace_of(POD), key_of(POD)) == ("web-0", "prod", "prod/web-0")
    assert (name_of(NODE), namespace_of(NODE), key_of(NODE)) == ("node-1", "", "node-1")
    assert labels_of(POD) == {"app": "web"} and annotations_of(POD) == {"note": "x"}
    assert labels_of(NODE) == {} and annotations_of(NODE) == {} and owner_references(NODE) == []
    assert [ref["name"] for ref in owner_references(POD)] == ["cm", "web"]


def test_accessors_tolerate_missing_and_null_metadata() -> None:
    for obj in ({}, {"metadata": None}, {"metadata": {"labels": None, "ownerReferences": None}}):
        assert (name_of(obj), namespace_of(obj), key_of(obj)) == ("", "", "")
        assert labels_of(obj) == {} and owner_references(obj) == [] and controller_ref(obj) is None


@pytest.mark.parametrize(
    ("key", "expected"),
    [("prod/web-0", ("prod", "web-0")), ("node-1", ("", "node-1")), ("/name", ("", "name")), ("", ("", ""))],
)
def test_split_key(key: str, expected: tuple[str, str]) -> None:
    assert split_key(key) == expected


def test_split_key_refuses_extra_slashes() -> None:
    with pytest.raises(ValueError, match="unexpected key format: 'a/b/c'"):
        split_key("a/b/c")


def test_controller_ref_is_the_one_marked_controller() -> None:
    ref = controller_ref(POD)
    assert ref is not None and ref["uid"] == "rs-uid"
    not_controlled = {"metadata": {"ownerReferences": [{"uid": "x", "controller": False}, {"uid": "y"}]}}
    assert controller_ref(not_controlled) is None


@pytest.mark.parametrize(
    ("owner", "controlled"),
    [
        pytest.param({"metadata": {"name": "web", "uid": "rs-uid"}}, True, id="same-uid"),
        pytest.param({"metadata": {"name": "web", "uid": "other"}}, False, id="recreated-owner"),
        pytest.param({"metadata": {"name": "cm", "uid": "cm-uid"}}, False, id="owner-but-not-controller"),
        pytest.param({"metadata": {"name": "web"}}, False, id="owner-without-uid"),
    ],
)
def test_is_controlled_by(owner: dict, controlled: bool) -> None:
    assert is_controlled_by(POD, owner) is controlled


def test_new_controller_ref() -> None:
    owner = {"metadata": {"name": "web", "namespace": "prod", "uid": "rs-uid"}}
    assert new_controller_ref(owner, api_version="apps/v1", kind="ReplicaSet") == {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "name": "web",
        "uid": "rs-uid",
        "controller": True,
        "blockOwnerDeletion": True,
    }
    child = {"metadata": {"ownerReferences": [new_controller_ref(owner, api_version="apps/v1", kind="ReplicaSet")]}}
    assert is_controlled_by(child, owner)


T0 = "2024-01-02T03:04:05Z"
T1 = "2024-01-02T03:09:00Z"


def ready(status: str, **extra: str) -> dict:
    return {"type": "Ready", "status": status, **extra}


def test_set_condition_adds_a_new_type_stamped_now() -> None:
    conditions: list[dict] = [ready("True", lastTransitionTime=T0)]
    assert set_condition(conditions, {"type": "Progressing", "status": "True"}, now=T1)
    assert conditions[1] == {"type": "Progressing", "status": "True", "lastTransitionTime": T1}


def test_set_condition_keeps_transition_time_while_status_holds() -> None:
    conditions = [ready("True", lastTransitionTime=T0, reason="A")]
    assert set_condition(conditions, ready("True", reason="B", message="m"), now=T1)
    assert conditions == [ready("True", lastTransitionTime=T0, reason="B", message="m")]


def test_set_condition_ignores_a_transition_time_offered_without_a_transition() -> None:
    conditions = [ready("True", lastTransitionTime=T0)]
    assert not set_condition(conditions, ready("True", lastTransitionTime=T1), now=T1)
    assert conditions == [ready("True", lastTransitionTime=T0)]


def test_set_condition_moves_transition_time_when_status_changes() -> None:
    conditions = [ready("True", lastTransitionTime=T0)]
    assert set_condition(conditions, ready("False", reason="Crashed"), now=datetime(2024, 1, 2, 3, 9, tzinfo=UTC))
    assert conditions == [ready("False", reason="Crashed", lastTransitionTime=T1)]


def test_set_condition_prefers_the_transition_time_the_condition_carries() -> None:
    conditions = [ready("True", lastTransitionTime=T0)]
    assert set_condition(conditions, ready("False", lastTransitionTime="2024-01-02T03:05:00Z"), now=T1)
    assert conditions[0]["lastTransitionTime"] == "2024-01-02T03:05:00Z"


def test_set_condition_reports_no_change() -> None:
    conditions = [ready("True", lastTransitionTime=T0, reason="A")]
    assert not set_condition(conditions, ready("True", reason="A"), now=T1)
    assert conditions == [ready("True", lastTransitionTime=T0, reason="A")]


def test_get_condition() -> None:
    obj = {"status": {"conditions": [ready("True"), {"type": "Available", "status": "False"}]}}
    assert get_condition(obj, "Available") == {"type": "Available", "status": "False"}
    assert get_condition(obj, "Missing") is None
    assert get_condition({}, "Ready") is None
    assert get_condition({"status": {"conditions": None}}, "Ready") is None


@pytest.mark.parametrize(
    ("moment", "micro", "text"),
    [
        pytest.param(datetime(2024, 1, 2, 3, 4, 5, 678901, tzinfo=UTC), False, T0, id="seconds"),
        pytest.param(
            datetime(2024, 1, 2, 3, 4, 5, 678901, tzinfo=UTC), True, "2024-01-02T03:04:05.678901Z", id="micro"
        ),
        pytest.param(datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC), True, "2024-01-02T03:04:05.000000Z", id="micro-0"),
        pytest.param(
            datetime(2024, 1, 2, 5, 4, 5, tzinfo=timezone(timedelta(hours=2))), False, T0, id="converted-to-utc"
        ),
    ],
)
def test_format_timestamp(moment: datetime, micro: bool, text: str) -> None:
    assert format_timestamp(moment, micro=micro) == text


def test_format_timestamp_refuses_naive_datetimes() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        format_timestamp(datetime(2024, 1, 2, 3, 4, 5))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(T0, datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC), id="utc"),
        pytest.param("2024-01-02T05:04:05+02:00", datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC), id="offset"),
        pytest.param("2024-01-02T03:04:05.5Z", datetime(2024, 1, 2, 3, 4, 5, 500000, tzinfo=UTC), id="fraction"),
        pytest.param(
            "2024-01-02T03:04:05.123456789Z", datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=UTC), id="nanos-cut"
        ),
    ],
)
def test_parse_timestamp(text: str, expected: datetime) -> None:
    parsed = parse_timestamp(text)
    assert parsed == expected
    assert parsed.utcoffset() == timedelta(0)


@pytest.mark.parametrize(
    "text",
    ["", "2024-01-02", "2024-01-02T03:04:05", "2024-01-02 03:04:05Z", "2024-13-02T03:04:05Z", "2024-01-02t03:04:05z",
     "2024-01-02T03:04:05Z ", "２０２４-01-02T03:04:05Z"],
)
def test_parse_timestamp_refuses(text: str) -> None:
    with pytest.raises(ValueError, match="not an RFC 3339 timestamp"):
        parse_timestamp(text)


@given(st.datetimes(min_value=datetime(1970, 1, 1), max_value=datetime(9999, 1, 1), timezones=st.just(UTC)))
def test_timestamps_round_trip(moment: datetime) -> None:
    assert parse_timestamp(format_timestamp(moment, micro=True)) == moment
    assert parse_timestamp(format_timestamp(moment)) == moment.replace(microsecond=0)


def test_deep_copy_shares_nothing_mutable() -> None:
    copied = deep_copy(POD)
    assert copied == POD
    copied["metadata"]["labels"]["app"] = "db"
    copied["metadata"]["ownerReferences"].append({})
    assert POD["metadata"]["labels"] == {"app": "web"}
    assert len(POD["metadata"]["ownerReferences"]) == 2


@pytest.mark.parametrize(
    ("api_version", "expected"),
    [
        ("v1", ("", "v1")),
        ("apps/v1", ("apps", "v1")),
        ("rbac.authorization.k8s.io/v1", ("rbac.authorization.k8s.io", "v1")),
        ("", ("", "")),
        ("/", ("", "")),
        ("apps/", ("apps", "")),
    ],
)
def test_group_version(api_version: str, expected: tuple[str, str]) -> None:
    assert group_version(api_version) == expected


def test_group_version_refuses_two_slashes() -> None:
    with pytest.raises(ValueError, match="unexpected GroupVersion string: a/b/c"):
        group_version("a/b/c")
