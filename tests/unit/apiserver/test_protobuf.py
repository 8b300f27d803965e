"""Decoding the Kubernetes protobuf envelope that kubectl 1.33's typed clients send: hand-built bodies for
the edge cases, and real bodies captured from kubectl 1.33 (protobuf) and 1.31 (JSON) for the same
commands (kubectl_bodies/, made by its capture.py), which must decode to the same JSON."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from control.apiserver.codec import protobuf
from control.apiserver.openapi.gnostic import encode_varint, length_delimited


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
    # spec and status are structs, which Go's JSON encoder writes even when empty (kubectl 1.31 sends them)
    raw = metadata("team-a", env=b"dev") + length_delimited(2, b"") + length_delimited(3, length_delimited(1, b""))
    assert protobuf.decode_object(envelope("v1", "Namespace", raw)) == {
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a", "labels": {"env": "dev"}},
        "spec": {}, "status": {}}


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
    assert protobuf.decode_object(envelope("example.com/v1", "Widget", metadata("d"))) is None
    assert protobuf.decode_object(envelope("apps/v1", "DeploymentList", b"")) is None  # not an object kind
    with pytest.raises(protobuf.ProtobufError):
        protobuf.decode_object(b'{"kind": "Namespace"}')
    with pytest.raises(protobuf.ProtobufError):
        protobuf.decode_object(protobuf.MAGIC + b"\x0a\xff")
    with pytest.raises(protobuf.ProtobufError):  # a string field sent as a varint
        protobuf.decode_object(envelope("v1", "ServiceAccount", length_delimited(1, varint_field(1, 7))))


@pytest.mark.parametrize("meta", [
    pytest.param(length_delimited(8, length_delimited(1, b"x")), id="time-seconds-as-bytes"),
    pytest.param(length_delimited(8, varint_field(1, 1 << 62)), id="time-out-of-range"),
    pytest.param(length_delimited(13, length_delimited(1, b"a") + length_delimited(
        5, b"v1") + varint_field(3, 1)), id="owner-name-as-varint"),
])
def test_malformed_well_known_messages_are_protobuf_errors(meta: bytes) -> None:
    with pytest.raises(protobuf.ProtobufError):
        protobuf.decode_object(envelope("v1", "ConfigMap", length_delimited(1, meta)))
    spec = length_delimited(1, length_delimited(2, b"x"))  # PDB minAvailable: intVal as bytes
    with pytest.raises(protobuf.ProtobufError):
        protobuf.decode_object(envelope("policy/v1", "PodDisruptionBudget", metadata("p") + length_delimited(2, spec)))


BODIES = Path(__file__).with_name("kubectl_bodies")


def without_nulls(value: Any) -> Any:
    """Go writes a zero metav1.Time as null (`creationTimestamp: null`); the decoder leaves it out."""
    if isinstance(value, dict):
        return {key: without_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [without_nulls(item) for item in value]
    return value


@pytest.mark.parametrize("name", sorted(path.stem for path in BODIES.glob("*.pb")))
def test_kubectl_133_protobuf_decodes_to_what_kubectl_131_sends_as_json(name: str) -> None:
    sent_as_json = json.loads((BODIES / f"{name}.json").read_bytes())
    assert protobuf.decode_object((BODIES / f"{name}.pb").read_bytes()) == without_nulls(sent_as_json)


def test_captured_bodies_cover_the_typed_create_commands() -> None:
    assert {path.stem for path in BODIES.glob("*.pb")} >= {
        "deployment", "service", "job", "cronjob", "serviceaccount", "quota", "secret", "ingress", "token"}


def test_pointer_zero_is_kept_and_omitempty_zero_dropped() -> None:
    # DeploymentSpec: replicas *int32 (0 means zero pods), minReadySeconds int32 and paused bool (omitempty)
    spec = varint_field(1, 0) + varint_field(5, 0) + varint_field(7, 0) + length_delimited(4, b"")
    decoded = protobuf.decode_object(envelope("apps/v1", "Deployment", metadata("d") + length_delimited(2, spec)))
    assert decoded is not None and decoded["spec"] == {"replicas": 0, "strategy": {}}


def test_embedded_structs_are_inlined_and_json_names_come_from_the_go_tags() -> None:
    empty_dir = length_delimited(2, b"")  # VolumeSource.emptyDir: a pointer to an empty struct is kept
    volume = length_delimited(1, b"scratch") + length_delimited(2, empty_dir)
    pod_spec = length_delimited(1, volume) + length_delimited(2, length_delimited(1, b"c") + length_delimited(2, b"i"))
    decoded = protobuf.decode_object(envelope("v1", "Pod", metadata("p") + length_delimited(2, pod_spec)))
    assert decoded is not None and decoded["spec"] == {"volumes": [{"name": "scratch", "emptyDir": {}}],
                                                       "containers": [{"name": "c", "image": "i"}]}
    # authentication/v1 BoundObjectReference: proto field `uID`, JSON `uid`
    bound = length_delimited(1, b"Pod") + length_delimited(3, b"p") + length_delimited(4, b"u-1")
    spec = length_delimited(1, b"api") + varint_field(4, 600) + length_delimited(3, bound)
    decoded = protobuf.decode_object(envelope("authentication.k8s.io/v1", "TokenRequest",
                                              metadata("robot") + length_delimited(2, spec)))
    assert decoded is not None and decoded["spec"] == {
        "audiences": ["api"], "expirationSeconds": 600, "boundObjectRef": {"kind": "Pod", "name": "p", "uid": "u-1"}}


def timestamp(seconds: int, nanos: int = 0) -> bytes:
    return varint_field(1, seconds) + (varint_field(2, nanos) if nanos else b"")


def test_times_raw_extensions_and_packed_integers() -> None:
    # coordination/v1 Lease: MicroTime keeps microseconds; ObjectMeta.creationTimestamp is a Time
    spec = length_delimited(1, b"node-a") + varint_field(2, 40) + length_delimited(4, timestamp(1700000000, 123456789))
    meta = length_delimited(1, length_delimited(1, b"node-a") + length_delimited(8, timestamp(1700000000)))
    decoded = protobuf.decode_object(envelope("coordination.k8s.io/v1", "Lease", meta + length_delimited(2, spec)))
    assert decoded == {"kind": "Lease", "apiVersion": "coordination.k8s.io/v1",
                       "metadata": {"name": "node-a", "creationTimestamp": "2023-11-14T22:13:20Z"},
                       "spec": {"holderIdentity": "node-a", "leaseDurationSeconds": 40,
                                "renewTime": "2023-11-14T22:13:20.123456Z"}}
    # apps/v1 ControllerRevision.data is a RawExtension: the JSON it carries
    revision = metadata("r") + length_delimited(2, length_delimited(1, b'{"spec": {"x": 1}}')) + varint_field(3, 2)
    decoded = protobuf.decode_object(envelope("apps/v1", "ControllerRevision", revision))
    assert decoded is not None and decoded["data"] == {"spec": {"x": 1}} and decoded["revision"] == 2
    with pytest.raises(protobuf.ProtobufError):
        protobuf.decode_object(envelope("apps/v1", "ControllerRevision", metadata("r") + length_delimited(
            2, length_delimited(1, b"\xff not json"))))
    # PodSecurityContext.supplementalGroups (repeated int64), packed or not
    packed = length_delimited(4, encode_varint(1000) + encode_varint(2000))
    context = packed + varint_field(4, 3000)
    pod_spec = length_delimited(14, context)
    decoded = protobuf.decode_object(envelope("v1", "Pod", metadata("p") + length_delimited(2, pod_spec)))
    assert decoded is not None and decoded["spec"]["securityContext"] == {"supplementalGroups": [1000, 2000, 3000]}


def test_mutated_kubectl_bodies_decode_or_are_protobuf_errors() -> None:
    """Whatever a damaged body holds, the answer is an object, None (415) or ProtobufError (400), never a
    crash (500)."""
    rng = random.Random(17)
    bodies = [path.read_bytes() for path in sorted(BODIES.glob("*.pb"))]
    for _ in range(3000):
        body = bytearray(rng.choice(bodies))
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(len(protobuf.MAGIC), len(body))
            body[at:at + rng.randint(0, 1)] = bytes([rng.randrange(256)] * rng.randint(0, 1))
        try:
            decoded = protobuf.decode_object(bytes(body))
        except protobuf.ProtobufError:
            continue
        assert decoded is None or isinstance(decoded, dict)
