"""clusterdns/zone.py + answer.py: what a query gets from the zone the informers keep (NXDOMAIN against
NODATA, SOA in negative answers, SRV additionals, CNAME, PTR, the schema's own names, forwarding)."""

from __future__ import annotations

import dns.flags
import dns.message
import dns.rcode
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clusterdns.answer import answer
from clusterdns.feeder import ZoneFeeder
from clusterdns.zone import Zone
from tests.unit.clusterdns.test_records import ep, eps, svc

SOA = "cluster.local. 5 IN SOA ns.dns.cluster.local. hostmaster.cluster.local. 1000 7200 1800 86400 5"


@pytest.fixture
def zone() -> Zone:
    zone = Zone("cluster.local", clock=lambda: 1000.0)
    feeder = ZoneFeeder(zone, "cluster.local")
    feeder.on_service(svc(clusterIP="10.96.0.20", ports=[{"name": "http", "port": 80, "protocol": "TCP"}]))
    feeder.on_service(svc("db", clusterIP="None"))
    feeder.on_slice(eps("db", ep("10.244.1.5", "db-0"), ep("10.244.2.6", "db-1"),
                        ports=[{"name": "pg", "port": 5432, "protocol": "TCP"}]))
    feeder.on_service(svc("ext", type="ExternalName", externalName="db.example.com"))
    feeder.on_service(svc("empty", clusterIP="None"))
    return zone


def ask(zone: Zone, name: str, rdtype: str) -> tuple[str, list[str], list[str], list[str]] | None:
    response = answer(dns.message.make_query(name, rdtype), zone, dns_address="10.96.0.10")
    if response is None:
        return None
    assert response.flags & dns.flags.AA
    lines = [line for rrset in response.answer for line in sorted(rrset.to_text().splitlines())]
    return (dns.rcode.to_text(response.rcode()), lines, [r.to_text() for r in response.authority],
            [line for rrset in response.additional for line in rrset.to_text().splitlines()])


@pytest.mark.parametrize(("name", "rdtype", "expected"), [
    pytest.param("web.ns.svc.cluster.local.", "A",
                 ("NOERROR", ["web.ns.svc.cluster.local. 5 IN A 10.96.0.20"], [], []), id="service-A"),
    pytest.param("Web.NS.svc.cluster.local.", "A",
                 ("NOERROR", ["Web.NS.svc.cluster.local. 5 IN A 10.96.0.20"], [], []), id="case-echoed"),
    pytest.param("web.ns.svc.cluster.local.", "AAAA", ("NOERROR", [], [SOA], []), id="nodata-has-soa"),
    pytest.param("nope.ns.svc.cluster.local.", "A", ("NXDOMAIN", [], [SOA], []), id="nxdomain-has-soa"),
    pytest.param("ns.svc.cluster.local.", "A", ("NOERROR", [], [SOA], []), id="namespace-is-empty-non-terminal"),
    pytest.param("other.svc.cluster.local.", "A", ("NXDOMAIN", [], [SOA], []), id="unknown-namespace"),
    pytest.param("_tcp.web.ns.svc.cluster.local.", "SRV", ("NOERROR", [], [SOA], []), id="proto-label-exists"),
    pytest.param("_http._tcp.web.ns.svc.cluster.local.", "SRV", (
        "NOERROR", ["_http._tcp.web.ns.svc.cluster.local. 5 IN SRV 0 100 80 web.ns.svc.cluster.local."], [],
        ["web.ns.svc.cluster.local. 5 IN A 10.96.0.20"]), id="srv-with-additional"),
    pytest.param("_https._tcp.web.ns.svc.cluster.local.", "SRV", ("NXDOMAIN", [], [SOA], []), id="no-such-port"),
    pytest.param("db.ns.svc.cluster.local.", "A", ("NOERROR", ["db.ns.svc.cluster.local. 5 IN A 10.244.1.5",
                                                               "db.ns.svc.cluster.local. 5 IN A 10.244.2.6"], [], []),
                 id="headless-all-ready"),
    pytest.param("db-1.db.ns.svc.cluster.local.", "A",
                 ("NOERROR", ["db-1.db.ns.svc.cluster.local. 5 IN A 10.244.2.6"], [], []), id="headless-hostname"),
    pytest.param("_pg._tcp.db.ns.svc.cluster.local.", "SRV", (
        "NOERROR", ["_pg._tcp.db.ns.svc.cluster.local. 5 IN SRV 0 50 5432 db-0.db.ns.svc.cluster.local.",
                    "_pg._tcp.db.ns.svc.cluster.local. 5 IN SRV 0 50 5432 db-1.db.ns.svc.cluster.local."], [],
        ["db-0.db.ns.svc.cluster.local. 5 IN A 10.244.1.5", "db-1.db.ns.svc.cluster.local. 5 IN A 10.244.2.6"]),
                 id="headless-srv"),
    pytest.param("empty.ns.svc.cluster.local.", "A", ("NXDOMAIN", [], [SOA], []), id="headless-no-endpoints"),
    pytest.param("ext.ns.svc.cluster.local.", "A",
                 ("NOERROR", ["ext.ns.svc.cluster.local. 5 IN CNAME db.example.com."], [], []), id="external-name"),
    pytest.param("20.0.96.10.in-addr.arpa.", "PTR",
                 ("NOERROR", ["20.0.96.10.in-addr.arpa. 5 IN PTR web.ns.svc.cluster.local."], [], []), id="ptr-svc"),
    pytest.param("6.2.244.10.in-addr.arpa.", "PTR",
                 ("NOERROR", ["6.2.244.10.in-addr.arpa. 5 IN PTR db-1.db.ns.svc.cluster.local."], [], []),
                 id="ptr-endpoint"),
    pytest.param("dns-version.cluster.local.", "TXT",
                 ("NOERROR", ['dns-version.cluster.local. 5 IN TXT "1.1.0"'], [], []), id="schema-version"),
    pytest.param("cluster.local.", "SOA", ("NOERROR", [SOA], [], []), id="apex-soa"),
    pytest.param("cluster.local.", "NS", ("NOERROR", ["cluster.local. 5 IN NS ns.dns.cluster.local."], [], []),
                 id="apex-ns"),
    pytest.param("ns.dns.cluster.local.", "A", ("NOERROR", ["ns.dns.cluster.local. 5 IN A 10.96.0.10"], [], []),
                 id="ns-glue"),
    pytest.param("10-244-1-9.ns.pod.cluster.local.", "A",
                 ("NOERROR", ["10-244-1-9.ns.pod.cluster.local. 5 IN A 10.244.1.9"], [], []), id="pods-insecure"),
    pytest.param("ns.pod.cluster.local.", "A", ("NOERROR", [], [SOA], []), id="pod-namespace-exists"),
    pytest.param("x-y.ns.pod.cluster.local.", "A", ("NXDOMAIN", [], [SOA], []), id="pod-name-not-an-ip"),
    pytest.param("svc.cluster.local.", "A", ("NOERROR", [], [SOA], []), id="svc-exists"),
])
def test_answers(zone, name, rdtype, expected):
    assert ask(zone, name, rdtype) == expected


@pytest.mark.parametrize(("name", "rdtype"), [
    pytest.param("example.com.", "A", id="outside-the-domain"),
    pytest.param("9.9.9.10.in-addr.arpa.", "PTR", id="reverse-not-ours-falls-through"),
    pytest.param("cluster.local.example.com.", "A", id="domain-as-a-prefix"),
])
def test_other_names_are_forwarded(zone, name, rdtype):
    assert ask(zone, name, rdtype) is None


def test_events_move_records(zone):
    feeder = ZoneFeeder(zone, "cluster.local")
    feeder.on_service(svc("db", clusterIP="None"))
    assert ask(zone, "db.ns.svc.cluster.local.", "A")[0] == "NXDOMAIN"  # a second feeder knows no slices yet
    slice_ = eps("db", ep("10.244.3.3", "db-9"))
    feeder.on_slice(slice_)
    assert ask(zone, "db-9.db.ns.svc.cluster.local.", "A")[1] == ["db-9.db.ns.svc.cluster.local. 5 IN A 10.244.3.3"]
    moved = eps("other", ep("10.244.3.3", "db-9"))
    feeder.on_slice_update(slice_, moved)  # relabelled: gone from db
    assert ask(zone, "db-9.db.ns.svc.cluster.local.", "A")[0] == "NXDOMAIN"
    feeder.on_service(svc("web", clusterIP="10.96.0.99"))
    assert ask(zone, "web.ns.svc.cluster.local.", "A")[1] == ["web.ns.svc.cluster.local. 5 IN A 10.96.0.99"]
    assert ask(zone, "20.0.96.10.in-addr.arpa.", "PTR") is None  # the old ClusterIP's PTR went with it
    feeder.on_service_delete(svc("web"))
    assert ask(zone, "web.ns.svc.cluster.local.", "A")[0] == "NXDOMAIN"
    feeder.on_slice_delete(moved)
    feeder.on_service_delete(svc("db"))
    feeder.on_service_delete(svc("ext"))
    feeder.on_service_delete(svc("empty"))
    assert ask(zone, "ns.svc.cluster.local.", "A")[0] == "NXDOMAIN"  # no Service left in the namespace
    assert not zone.names


def test_serial_follows_changes():
    now = [1000.0]
    zone = Zone(clock=lambda: now[0])
    now[0] = 2000.0
    ZoneFeeder(zone, "cluster.local").on_service(svc(clusterIP="10.96.0.20"))
    assert zone.soa.to_text().split()[6] == "2000"


def test_any_and_malformed(zone):
    any_answer = ask(zone, "_http._tcp.web.ns.svc.cluster.local.", "ANY")
    assert any_answer is not None and len(any_answer[1]) == 1
    query = dns.message.make_query("web.ns.svc.cluster.local.", "A")
    query.question.append(query.question[0])
    response = answer(query, zone)
    assert response is not None and response.rcode() == dns.rcode.FORMERR


@given(st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.sampled_from(["x", "y"]),
                          st.one_of(st.none(), st.sampled_from(["10.96.0.5", "10.96.0.6", "None"])),
                          st.lists(st.sampled_from(["10.244.1.1", "10.244.1.2", "10.244.2.1"]), max_size=3)),
                max_size=25))
@settings(max_examples=60, deadline=None)
def test_zone_after_any_events_equals_a_fresh_one(events):
    """Whatever order Services come, change and go in, the zone equals one built from the final state."""
    zone = Zone(clock=lambda: 1.0)
    feeder = ZoneFeeder(zone, "cluster.local")
    final: dict[tuple[str, str], tuple[dict, dict]] = {}
    for name, ns, cluster_ip, addresses in events:
        if cluster_ip is None:
            feeder.on_service_delete(svc(name, ns))
            final.pop((name, ns), None)
            continue
        service = svc(name, ns, clusterIP=cluster_ip, ports=[{"name": "p", "port": 1, "protocol": "TCP"}])
        slice_ = eps(name, *[ep(a, f"h{i}") for i, a in enumerate(addresses)], ns=ns)
        feeder.on_service(service)
        feeder.on_slice(slice_)
        final[(name, ns)] = (service, slice_)
    fresh = Zone(clock=lambda: 1.0)
    fresh_feeder = ZoneFeeder(fresh, "cluster.local")
    for service, slice_ in final.values():
        fresh_feeder.on_slice(slice_)
        fresh_feeder.on_service(service)
    assert {n: {t: r.to_text() for t, r in v.items()} for n, v in zone.names.items()} == \
        {n: {t: r.to_text() for t, r in v.items()} for n, v in fresh.names.items()}
    assert zone._below == fresh._below
