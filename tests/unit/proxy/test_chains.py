"""Chain names and formatting exactly as upstream (kubernetes pkg/proxy/iptables/proxier.go and the chain
names its proxier_test.go expects for ns1/svc1:p80 etc.)."""

from __future__ import annotations

import pytest

from proxy import chains
from proxy.model import ServicePortName


@pytest.mark.parametrize(("name", "expected"), [
    pytest.param(ServicePortName("default", "kubernetes", "https", "TCP"), "KUBE-SVC-NPX46M4PTMTKRN6Y", id="issue"),
    pytest.param(ServicePortName("ns1", "svc1", "p80", "TCP"), "KUBE-SVC-XPGD46QRK7WJZT7O", id="upstream-ns1"),
    pytest.param(ServicePortName("ns2", "svc2", "p80", "TCP"), "KUBE-SVC-GNZBNJ2PO5MGZ6GT", id="upstream-ns2"),
])
def test_service_chain_name_is_upstreams_hash(name: ServicePortName, expected: str) -> None:
    assert chains.service_chain_name(name) == expected


def test_other_per_service_chains_share_the_hash() -> None:
    name = ServicePortName("ns2", "svc2", "p80", "TCP")
    suffix = "GNZBNJ2PO5MGZ6GT"
    assert chains.local_chain_name(name) == "KUBE-SVL-" + suffix
    assert chains.external_chain_name(name) == "KUBE-EXT-" + suffix


def test_endpoint_chain_name_hashes_name_protocol_and_address() -> None:
    name = ServicePortName("ns1", "svc1", "p80", "TCP")
    assert chains.endpoint_chain_name(name, "10.180.0.1:80") == "KUBE-SEP-SXIVWICOYRO3J4NJ"
    assert chains.endpoint_chain_name(ServicePortName("ns2", "svc2", "p80", "TCP"), "10.180.0.2:80") == \
        "KUBE-SEP-RS4RBKLTHTF2IUXJ"


def test_protocol_is_part_of_the_hash() -> None:
    tcp = ServicePortName("ns", "dns", "dns", "TCP")
    udp = ServicePortName("ns", "dns", "dns", "UDP")
    assert chains.service_chain_name(tcp) != chains.service_chain_name(udp)
    assert chains.endpoint_chain_name(tcp, "10.0.0.1:53") != chains.endpoint_chain_name(udp, "10.0.0.1:53")


def test_names_fit_iptables_limit() -> None:
    name = ServicePortName("a" * 63, "b" * 63, "c" * 15, "SCTP")
    for chain in (chains.service_chain_name(name), chains.endpoint_chain_name(name, "10.0.0.1:1")):
        assert len(chain) <= 28


@pytest.mark.parametrize(("n", "text"), [(1, "1.0000000000"), (2, "0.5000000000"), (3, "0.3333333333"),
                                         (7, "0.1428571429"), (1000, "0.0010000000")])
def test_probability_has_ten_decimals(n: int, text: str) -> None:
    assert chains.probability(n) == text


def test_masquerade_mark() -> None:
    assert chains.masquerade_mark(14) == "0x4000"
    assert chains.masquerade_mark(0) == "0x1"
    with pytest.raises(ValueError):
        chains.masquerade_mark(32)


@pytest.mark.parametrize(("chain", "ours"), [
    ("KUBE-SVC-XPGD46QRK7WJZT7O", True), ("KUBE-SEP-SXIVWICOYRO3J4NJ", True), ("KUBE-EXT-X", True),
    ("KUBE-SVL-X", True), ("KUBE-FW-X", True), ("KUBE-XLB-X", True), ("KUBE-SERVICES", False),
    ("KUBE-POD-MASQ", False), ("DOCKER", False)])
def test_is_service_chain(chain: str, ours: bool) -> None:
    assert chains.is_service_chain(chain) is ours
