"""clusterdns/records.py: the records of the DNS specification from Service and EndpointSlice objects."""

from __future__ import annotations

import pytest

from clusterdns.records import Record, endpoint_hostname, service_records

D = "cluster.local"


def svc(name: str = "web", ns: str = "ns", **spec) -> dict:
    return {"metadata": {"name": name, "namespace": ns}, "spec": spec}


def eps(service: str, *endpoints: dict, ns: str = "ns", ports=({"name": "http", "port": 8080, "protocol": "TCP"},),
        address_type: str = "IPv4", name: str = "") -> dict:
    return {"metadata": {"name": name or f"{service}-abc", "namespace": ns,
                         "labels": {"kubernetes.io/service-name": service}},
            "addressType": address_type, "ports": list(ports), "endpoints": list(endpoints)}


def ep(address: str, hostname: str = "", ready: bool | None = True) -> dict:
    endpoint: dict = {"addresses": [address], "conditions": {} if ready is None else {"ready": ready}}
    if hostname:
        endpoint["hostname"] = hostname
    return endpoint


def R(name: str, rtype: str, data: str) -> Record:
    return Record(name, rtype, data)


@pytest.mark.parametrize(("service", "slices", "expected"), [
    pytest.param(svc(clusterIP="10.96.0.20", ports=[{"name": "http", "port": 80, "protocol": "TCP"},
                                                    {"name": "dns", "port": 53, "protocol": "UDP"},
                                                    {"port": 9000}]), [], [
        R("20.0.96.10.in-addr.arpa.", "PTR", "web.ns.svc.cluster.local."),
        R("_dns._udp.web.ns.svc.cluster.local.", "SRV", "0 100 53 web.ns.svc.cluster.local."),
        R("_http._tcp.web.ns.svc.cluster.local.", "SRV", "0 100 80 web.ns.svc.cluster.local."),
        R("web.ns.svc.cluster.local.", "A", "10.96.0.20"),
    ], id="cluster-ip-named-ports-only"),
    pytest.param(svc(clusterIP="10.96.0.20", clusterIPs=["10.96.0.20", "fd00::14"]), [], [
        R("20.0.96.10.in-addr.arpa.", "PTR", "web.ns.svc.cluster.local."),
        R("4.1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.d.f.ip6.arpa.", "PTR",
          "web.ns.svc.cluster.local."),
        R("web.ns.svc.cluster.local.", "A", "10.96.0.20"),
        R("web.ns.svc.cluster.local.", "AAAA", "fd00::14"),
    ], id="dual-stack"),
    pytest.param(svc(clusterIP="10.96.0.20"), [eps("web", ep("10.244.1.5"))], [
        R("20.0.96.10.in-addr.arpa.", "PTR", "web.ns.svc.cluster.local."),
        R("web.ns.svc.cluster.local.", "A", "10.96.0.20"),
    ], id="cluster-ip-ignores-endpoints"),
    pytest.param(svc(clusterIP="None"), [eps("web", ep("10.244.1.5", "web-0"), ep("10.244.2.6"),
                                              ep("10.244.2.7", "web-2", ready=False))], [
        R("10-244-2-6.web.ns.svc.cluster.local.", "A", "10.244.2.6"),
        R("5.1.244.10.in-addr.arpa.", "PTR", "web-0.web.ns.svc.cluster.local."),
        R("6.2.244.10.in-addr.arpa.", "PTR", "10-244-2-6.web.ns.svc.cluster.local."),
        R("_http._tcp.web.ns.svc.cluster.local.", "SRV", "0 50 8080 10-244-2-6.web.ns.svc.cluster.local."),
        R("_http._tcp.web.ns.svc.cluster.local.", "SRV", "0 50 8080 web-0.web.ns.svc.cluster.local."),
        R("web-0.web.ns.svc.cluster.local.", "A", "10.244.1.5"),
        R("web.ns.svc.cluster.local.", "A", "10.244.1.5"),
        R("web.ns.svc.cluster.local.", "A", "10.244.2.6"),
    ], id="headless-ready-endpoints-hostname-or-dashed-ip"),
    pytest.param(svc(clusterIP="None", publishNotReadyAddresses=True),
                 [eps("web", ep("10.244.2.7", "web-2", ready=False), ports=())], [
        R("7.2.244.10.in-addr.arpa.", "PTR", "web-2.web.ns.svc.cluster.local."),
        R("web-2.web.ns.svc.cluster.local.", "A", "10.244.2.7"),
        R("web.ns.svc.cluster.local.", "A", "10.244.2.7"),
    ], id="headless-publish-not-ready"),
    pytest.param(svc(clusterIP="None"), [eps("web", ep("10.244.2.7", ready=False))], [], id="headless-none-ready"),
    pytest.param(svc(clusterIP="None"), [eps("web", ep("10.244.1.5", "a"), name="s1"),
                                         eps("web", ep("10.244.1.5", "a"), name="s2")], [
        R("5.1.244.10.in-addr.arpa.", "PTR", "a.web.ns.svc.cluster.local."),
        R("_http._tcp.web.ns.svc.cluster.local.", "SRV", "0 100 8080 a.web.ns.svc.cluster.local."),
        R("a.web.ns.svc.cluster.local.", "A", "10.244.1.5"),
        R("web.ns.svc.cluster.local.", "A", "10.244.1.5"),
    ], id="duplicate-endpoint-across-slices-once"),
    pytest.param(svc(clusterIP="None"), [eps("web", {"addresses": ["db.example.com"]}, address_type="FQDN")], [],
                 id="fqdn-slice-skipped"),
    pytest.param(svc(type="ExternalName", externalName="DB.Example.com."), [], [
        R("web.ns.svc.cluster.local.", "CNAME", "db.example.com."),
    ], id="external-name"),
    pytest.param(svc(name="Web", ns="NS", clusterIP="10.96.0.20"), [], [
        R("20.0.96.10.in-addr.arpa.", "PTR", "web.ns.svc.cluster.local."),
        R("web.ns.svc.cluster.local.", "A", "10.96.0.20"),
    ], id="lower-case"),
])
def test_service_records(service, slices, expected):
    assert service_records(service, slices, D) == expected


def test_tolerate_unready_annotation_publishes_not_ready():
    service = svc(clusterIP="None")
    service["metadata"]["annotations"] = {"service.alpha.kubernetes.io/tolerate-unready-endpoints": "true"}
    names = {r.name for r in service_records(service, [eps("web", ep("10.244.2.7", "x", ready=False))], D)}
    assert "x.web.ns.svc.cluster.local." in names


def test_other_domain_and_ipv6_endpoint_hostname():
    records = service_records(svc(clusterIP="None"), [eps("web", ep("fd00::5"), address_type="IPv6")], "corp.example")
    assert Record("fd00--5.web.ns.svc.corp.example.", "AAAA", "fd00::5") in records
    assert endpoint_hostname({"hostname": "Web-0"}, "10.0.0.1") == "web-0"
