"""discovery.k8s.io/v1 EndpointSlices in the API server: defaults, upstream's validation essentials,
generation, the `kubectl get endpointslices` columns and the protobuf body."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from control.api.defaults import apply_defaults
from control.api.validation import validate
from control.apiserver.codec import protobuf
from control.apiserver.endpoints import tables
from control.apiserver.openapi.gnostic import encode_varint, length_delimited
from control.apiserver.registry.strategies import strategy_for
from control.apiserver.resources import by_path

NOW = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
SLICES = by_path("discovery.k8s.io", "v1", "endpointslices")


def _slice(**overrides) -> dict:
    obj = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
           "metadata": {"name": "web-abcde", "namespace": "default"}, "addressType": "IPv4",
           "endpoints": [{"addresses": ["10.244.0.5"], "conditions": {"ready": True}}],
           "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]}
    obj.update(overrides)
    return obj


def _errors(obj: dict, old: dict | None = None) -> list[str]:
    apply_defaults("endpointslices", obj)
    return [error.message for error in validate("endpointslices", obj, old=old)]


def test_resource_is_served_namespaced_in_its_group():
    assert SLICES is not None and SLICES.namespaced and SLICES.kind == "EndpointSlice"
    assert SLICES.api_version == "discovery.k8s.io/v1"


def test_defaults_port_protocol_name_and_empty_endpoints():
    obj = {"addressType": "IPv4", "ports": [{"port": 80}]}
    apply_defaults("endpointslices", obj)
    assert obj["ports"] == [{"port": 80, "protocol": "TCP", "name": ""}]
    assert obj["endpoints"] == []


def test_a_valid_slice_has_no_errors():
    assert _errors(_slice()) == []


@pytest.mark.parametrize(("overrides", "expected"), [
    pytest.param({"addressType": None}, "addressType: Required value", id="address-type-required"),
    pytest.param({"addressType": "IP"}, 'addressType: Unsupported value: "IP": supported values: "FQDN", "IPv4", '
                                        '"IPv6"', id="address-type-unsupported"),
    pytest.param({"endpoints": [{"addresses": []}]},
                 "endpoints[0].addresses: Required value: must contain at least 1 address", id="no-address"),
    pytest.param({"endpoints": [{"addresses": ["fd00::1"]}]},
                 'endpoints[0].addresses[0]: Invalid value: "fd00::1": must be a valid IPv4 address', id="v6-in-v4"),
    pytest.param({"endpoints": [{"addresses": ["169.254.1.1"]}]},
                 'endpoints[0].addresses[0]: Invalid value: "169.254.1.1": may not be in the link-local range '
                 "(169.254.0.0/16, fe80::/10)", id="link-local"),
    pytest.param({"endpoints": [{"addresses": ["10.0.0.1"]}] * 1001},
                 "endpoints: Too many: 1001: must have at most 1000 items", id="over-1000-endpoints"),
    pytest.param({"ports": [{"name": "a", "port": 1}, {"name": "a", "port": 2}]},
                 'ports[1].name: Duplicate value: "a"', id="duplicate-port-name"),
    pytest.param({"ports": [{"name": "a", "port": 1, "protocol": "ICMP"}]},
                 'ports[0].protocol: Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"',
                 id="protocol"),
    pytest.param({"ports": [{"name": "Web", "port": 1}]}, 'ports[0].name: Invalid value: "Web"',
                 id="port-name-dns-label"),
])
def test_validation_errors(overrides, expected):
    messages = _errors(_slice(**{k: v for k, v in overrides.items() if v is not None}) if None not in
                       overrides.values() else {k: v for k, v in _slice().items() if k not in overrides})
    assert any(message.startswith(expected) for message in messages), messages


def test_fqdn_addresses_need_two_segments():
    assert _errors(_slice(addressType="FQDN", endpoints=[{"addresses": ["example.com"]}])) == []
    assert _errors(_slice(addressType="FQDN", endpoints=[{"addresses": ["example"]}]))


def test_address_type_is_immutable():
    old = _slice()
    messages = _errors(_slice(addressType="IPv6", endpoints=[{"addresses": ["fd00::5"]}]), old)
    assert messages == ['addressType: Invalid value: "IPv6": field is immutable']


def test_generation_grows_with_changes_outside_metadata():
    strategy = strategy_for(SLICES)
    obj = _slice()
    strategy.prepare_for_create(obj, now=NOW, uid="u1")
    assert obj["metadata"]["generation"] == 1
    new = _slice(endpoints=[])
    strategy.prepare_for_update(new, obj)
    assert new["metadata"]["generation"] == 2
    same = _slice(endpoints=[])
    same["metadata"]["labels"] = {"x": "y"}
    strategy.prepare_for_update(same, new)
    assert same["metadata"]["generation"] == 2


def _row(obj: dict) -> dict[str, object]:
    table = tables.table_for(SLICES, [obj], now=NOW, list_resource_version="7")
    names = [column["name"] for column in table["columnDefinitions"]]
    return dict(zip(names, table["rows"][0]["cells"], strict=True))


def test_kubectl_columns_as_upstream():
    created = (NOW - timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
    obj = _slice(endpoints=[{"addresses": [f"10.244.0.{i}"]} for i in range(1, 6)],
                 ports=[{"name": "a", "port": 80}, {"name": "b"}, {}, {"port": 9}])
    obj["metadata"]["creationTimestamp"] = created
    assert _row(obj) == {"Name": "web-abcde", "AddressType": "IPv4", "Ports": "80,b,* + 1 more...",
                         "Endpoints": "10.244.0.1,10.244.0.2,10.244.0.3 + 2 more...", "Age": "5m"}
    assert _row(_slice(endpoints=[], ports=[])) | {"Age": ""} == {
        "Name": "web-abcde", "AddressType": "IPv4", "Ports": "<unset>", "Endpoints": "<unset>", "Age": ""}


def test_protobuf_body_decodes_to_the_json_a_client_sends():
    meta = length_delimited(1, length_delimited(1, b"web-1") + length_delimited(3, b"default"))
    conditions = encode_varint(1 << 3) + encode_varint(0) + encode_varint(3 << 3) + encode_varint(1)
    endpoint = (length_delimited(1, b"10.244.0.5") + length_delimited(2, conditions)
                + length_delimited(4, length_delimited(1, b"Pod") + length_delimited(3, b"web-0"))
                + length_delimited(6, b"node-a") + length_delimited(7, b"z1"))
    port = length_delimited(1, b"http") + length_delimited(2, b"TCP") + encode_varint(3 << 3) + encode_varint(8080)
    raw = meta + length_delimited(4, b"IPv4") + length_delimited(2, endpoint) + length_delimited(3, port)
    type_meta = length_delimited(1, b"discovery.k8s.io/v1") + length_delimited(2, b"EndpointSlice")
    body = protobuf.MAGIC + length_delimited(1, type_meta) + length_delimited(2, raw)
    assert protobuf.decode_object(body) == {
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "web-1", "namespace": "default"}, "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.244.0.5"], "conditions": {"ready": False, "terminating": True},
                       "targetRef": {"kind": "Pod", "name": "web-0"}, "nodeName": "node-a", "zone": "z1"}],
        "ports": [{"name": "http", "protocol": "TCP", "port": 8080}]}
