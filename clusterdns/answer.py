"""A query → the cluster DNS's authoritative answer, or None when the name is to be forwarded (pure over
the zone).

Upstream: CoreDNS's kubernetes plugin (plugin/kubernetes/handler.go, kubernetes.go) in the
configuration kubeadm and k3s ship (`kubernetes cluster.local in-addr.arpa ip6.arpa { pods insecure;
fallthrough in-addr.arpa ip6.arpa }`, then `forward . /etc/resolv.conf`):

- names in the cluster domain are answered authoritatively (AA): the zone's RRsets (zone.py); a CNAME
  (ExternalName) answers every type; SRV answers carry the targets' addresses in the additional section;
  no records of the type → NOERROR/NODATA if the name exists (also as an empty non-terminal), NXDOMAIN if
  not; either way the SOA in the authority section, so negative answers are cached for the TTL;
- names the zone does not hold but the schema defines: `dns-version.<zone>` TXT "1.1.0" (CoreDNS's
  DNSSchemaVersion), the apex SOA and NS (`ns.dns.<zone>`, whose A is the cluster DNS address),
  `svc.<zone>`, `pod.<zone>`, `<ns>.pod.<zone>` (existing, no records), and the deprecated pod records
  `<a-b-c-d>.<ns>.pod.<zone>` A, answered from the name alone as `pods insecure` does;
- reverse names: a PTR the zone holds (a ClusterIP, a headless endpoint) is answered, any other reverse
  name falls through to forwarding, as `fallthrough in-addr.arpa ip6.arpa` does;
- every other name → None (forwarded to the node's resolvers, forward.py).

The answer echoes the query's spelling of the name (lookups are case-insensitive).
"""

from __future__ import annotations

import ipaddress

import dns.flags
import dns.message
import dns.name
import dns.rcode
import dns.rdata
import dns.rdatatype
import dns.rrset

from clusterdns.zone import IN, Zone

SCHEMA_VERSION = "1.1.0"  # CoreDNS plugin/kubernetes DNSSchemaVersion
ANY = dns.rdatatype.ANY
A, AAAA, CNAME, SRV, PTR, SOA, NS, TXT = (dns.rdatatype.A, dns.rdatatype.AAAA, dns.rdatatype.CNAME,
                                          dns.rdatatype.SRV, dns.rdatatype.PTR, dns.rdatatype.SOA,
                                          dns.rdatatype.NS, dns.rdatatype.TXT)
REVERSE_SUFFIXES = (".in-addr.arpa.", ".ip6.arpa.")


def _rrset(name: str, rdtype: dns.rdatatype.RdataType, ttl: int, *texts: str) -> dns.rrset.RRset:
    rrset = dns.rrset.RRset(dns.name.from_text(name), IN, rdtype)
    for text in texts:
        rrset.add(dns.rdata.from_text(IN, rdtype, text), ttl)
    return rrset


def _pod_address(label: str) -> str | None:
    """`10-244-1-5` → 10.244.1.5 (and the IPv6 spelling with dashes for colons), or None."""
    for text in (label.replace("-", "."), label.replace("-", ":")):
        try:
            return str(ipaddress.ip_address(text))
        except ValueError:
            continue
    return None


def synthetic(name: str, zone: Zone, *, dns_address: str | None) -> tuple[dict[int, dns.rrset.RRset], bool]:
    """RRsets and existence of the schema's names the zone does not store (module notes)."""
    relative = name[: -len(zone.domain)].rstrip(".") if name != zone.domain else ""
    labels = relative.split(".") if relative else []
    ttl = zone.ttl
    if not labels:
        return {SOA: zone.soa, NS: _rrset(name, NS, ttl, f"ns.dns.{zone.domain}")}, True
    if labels == ["dns-version"]:
        return {TXT: _rrset(name, TXT, ttl, f'"{SCHEMA_VERSION}"')}, True
    if labels == ["ns", "dns"]:
        kind = AAAA if dns_address and ":" in dns_address else A
        return ({kind: _rrset(name, kind, ttl, dns_address)} if dns_address else {}), True
    if labels in (["dns"], ["svc"], ["pod"]) or (len(labels) == 2 and labels[1] == "pod"):
        return {}, True
    if len(labels) == 3 and labels[2] == "pod" and (address := _pod_address(labels[0])) is not None:
        kind = AAAA if ":" in address else A
        return {kind: _rrset(name, kind, ttl, address)}, True
    return {}, False


def _as_asked(rrset: dns.rrset.RRset, qname: dns.name.Name) -> dns.rrset.RRset:
    """The RRset under the query's spelling of its name (a copy only when the spelling differs)."""
    if rrset.name.labels == qname.labels:  # byte-wise: Name equality ignores case
        return rrset
    return dns.rrset.from_rdata_list(qname, rrset.ttl, list(rrset))


def _additional(response: dns.message.Message, zone: Zone, answer: dns.rrset.RRset) -> None:
    seen: set[str] = set()
    for rdata in answer:
        target = rdata.target.to_text().lower()
        if target in seen:
            continue
        seen.add(target)
        for kind in (A, AAAA):
            if (rrsets := zone.lookup(target)) and kind in rrsets:
                response.additional.append(rrsets[kind])


def answer(query: dns.message.Message, zone: Zone, *, dns_address: str | None = None) -> dns.message.Message | None:
    """The response to `query`, or None to forward it (module notes)."""
    if len(query.question) != 1:
        response = dns.message.make_response(query)
        response.set_rcode(dns.rcode.FORMERR)
        return response
    question = query.question[0]
    qname, qtype = question.name, question.rdtype
    name = qname.to_text().lower()
    in_zone = name == zone.domain or name.endswith("." + zone.domain)
    rrsets = zone.lookup(name)
    if not in_zone and (rrsets is None or not name.endswith(REVERSE_SUFFIXES)):
        return None
    response = dns.message.make_response(query)
    response.flags |= dns.flags.AA | dns.flags.RA
    exists = rrsets is not None
    if rrsets is None:
        rrsets, exists = synthetic(name, zone, dns_address=dns_address)
    if qtype == ANY:
        response.answer.extend(_as_asked(rrset, qname) for rrset in rrsets.values())
    elif (found := rrsets.get(qtype)) is not None or (found := rrsets.get(CNAME)) is not None:
        response.answer.append(_as_asked(found, qname))
        if qtype == SRV:
            _additional(response, zone, found)
    if not response.answer:
        if not exists and not zone.exists(name):
            response.set_rcode(dns.rcode.NXDOMAIN)
        if in_zone:
            response.authority.append(zone.soa)
    return response
