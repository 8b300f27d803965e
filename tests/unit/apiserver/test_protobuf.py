"""Decoding the Kubernetes protobuf envelope that kubectl 1.33's typed clients send."""

from __future__ import annotations

import pytest

from control.apiserver import protobuf
from control.apiserver.openapi import encode_varint, length_delimited


def entry(key: str, value: bytes) -> bytes:
    return length_delimited(1, key.encode()) + length_delimited(2, value)


def envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    type_meta = length_delimited(1, api_version.encode()) + length_delimited(2, kind.encode())
    return protobuf.MAGIC + length_delimited(1, type_meta) + length_delimited(2, raw) + length_delimited(
        3, b"") + length_delimited(4, b"")


def metadata(name: str, **extra: bytes) -> bytes:
    # gogo-protobuf writes every string field, empty or not, and a zero creationTimestamp
    fields = length_delimited(1, name.encode()) + length_delimited(2, b"") + length_delimited(3, b"")
    fields += encode_varint(7 << 3) + encode_varint(0)
    fields += length_delimited(8, b"")
    for key, value in extra.items():
        fields += length_delimited(11, entry(key, value))
    return length_delimited(1, fields)


def test_namespace_as_kubectl_create_namespace_sends_it() -> None:
    raw = metadata("team-a", env=b"dev") + length_delimited(2, b"") + length_delimited(3, length_delimited(1, b""))
    assert protobuf.decode_object(envelope("v1", "Namespace", raw)) == {
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a", "labels": {"env": "dev"}}}


def test_configmap_and_secret_maps() -> None:
    raw = metadata("cfg") + length_delimited(2, entry("mode", b"fast")) + length_delimited(3, entry("bin", b"\x00\x01"))
    assert protobuf.decode_object(envelope("v1", "ConfigMap", raw)) == {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"},
        "data": {"mode": "fast"}, "binaryData": {"bin": "AAE="}}
    raw = metadata("s") + length_delimited(2, entry("password", b"s3cret")) + length_delimited(3, b"Opaque")
    assert protobuf.decode_object(envelope("v1", "Secret", raw)) == {
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"password": "czNjcmV0"},
        "type": "Opaque"}


def test_priority_class_as_kubectl_create_priorityclass_sends_it() -> None:
    negative = encode_varint(2 << 3) + encode_varint((1 << 64) - 5)  # int32 -5 as protobuf writes it
    raw = metadata("batch") + negative + encode_varint(3 << 3) + encode_varint(1) + length_delimited(4, b"") + \
        length_delimited(5, b"PreemptLowerPriority")
    assert protobuf.decode_object(envelope("scheduling.k8s.io/v1", "PriorityClass", raw)) == {
        "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "batch"}, "value": -5,
        "globalDefault": True, "preemptionPolicy": "PreemptLowerPriority"}


def varint_field(number: int, value: int) -> bytes:
    return encode_varint(number << 3) + encode_varint(value)


def test_pod_disruption_budget_int_or_string_and_selector() -> None:
    selector = length_delimited(1, entry("app", b"web")) + length_delimited(2, length_delimited(
        1, b"tier") + length_delimited(2, b"In") + length_delimited(3, b"a") + length_delimited(3, b"b"))
    zero = varint_field(1, 0) + varint_field(2, 0) + length_delimited(3, b"")  # minAvailable: 0 is meaningful
    spec = length_delimited(1, zero) + length_delimited(2, selector)
    assert protobuf.decode_object(envelope("policy/v1", "PodDisruptionBudget", metadata("pdb") + length_delimited(
        2, spec))) == {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "pdb"},
                       "spec": {"minAvailable": 0, "selector": {
                           "matchLabels": {"app": "web"},
                           "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]}}}
    percent = varint_field(1, 1) + varint_field(2, 0) + length_delimited(3, b"25%")
    decoded = protobuf.decode_object(envelope("policy/v1", "PodDisruptionBudget", metadata("pdb") + length_delimited(
        2, length_delimited(3, percent))))
    assert decoded is not None and decoded["spec"] == {"maxUnavailable": "25%"}


@pytest.mark.parametrize("api_version", ["policy/v1", "policy/v1beta1"])
def test_eviction_keeps_a_zero_grace_period(api_version: str) -> None:
    options = varint_field(1, 0) + length_delimited(2, length_delimited(2, b"42")) + length_delimited(5, b"All")
    assert protobuf.decode_object(envelope(api_version, "Eviction", metadata("p") + length_delimited(2, options))) == {
        "apiVersion": api_version, "kind": "Eviction", "metadata": {"name": "p"},
        "deleteOptions": {"gracePeriodSeconds": 0, "preconditions": {"resourceVersion": "42"}, "dryRun": ["All"]}}


def test_unknown_kind_is_none_and_garbage_is_an_error() -> None:
    assert protobuf.decode_object(envelope("apps/v1", "Deployment", metadata("d"))) is None
    with pytest.raises(protobuf.ProtobufError):
        protobuf.decode_object(b'{"kind": "Namespace"}')
    with pytest.raises(protobuf.ProtobufError):
        protobuf.decode_object(protobuf.MAGIC + b"\x0a\xff")
