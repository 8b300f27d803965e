"""The cluster zone in memory: every Service's records (records.py) merged into ready-made RRsets, kept up
to date by the informer handlers (app.py) one Service at a time, so answering a query is a dictionary
lookup and never a scan of the Services (bench/dns.py measures it against a static zone).

Writers (the informer thread) serialise on a lock; readers (the server threads) take no lock: a name's
entry is replaced by a new dict in one assignment, so a reader sees either the old or the new RRsets of a
name. Existence (for NXDOMAIN against NODATA) counts, per name of the cluster domain, how many Services have
records at it or below it: `web.ns.svc.<zone>` existing makes `ns.svc.<zone>` exist (an empty
non-terminal), which answers NODATA, not NXDOMAIN.

Upstream: CoreDNS's kubernetes plugin answers from its informer caches with indexes (by service name, by
IP); the SOA (`ns.dns.<zone>`, `hostmaster.<zone>`, serial = the time of the last change, refresh 7200,
retry 1800, expire 86400, minimum = the TTL) is its plugin/kubernetes `SOA` shape.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable

import dns.name
import dns.rdata
import dns.rdataclass
import dns.rdatatype
import dns.rrset

from clusterdns.records import Record

DEFAULT_TTL = 5  # CoreDNS kubernetes plugin defaultTTL
IN = dns.rdataclass.IN


class Zone:
    """The records of every Service, by name (module notes). `domain` is the cluster domain."""

    def __init__(self, domain: str = "cluster.local", *, ttl: int = DEFAULT_TTL,
                 clock: Callable[[], float] = time.time) -> None:
        self.domain = domain.lower().rstrip(".") + "."
        self.origin = dns.name.from_text(self.domain)
        self.ttl = ttl
        self._clock = clock
        self._lock = threading.Lock()
        self._by_service: dict[str, list[Record]] = {}
        self._owners: dict[str, dict[str, list[Record]]] = {}  # name → service key → its records there
        self._below: Counter[str] = Counter()  # cluster-domain name → Services with records at or below it
        # published (read without the lock): name → rdatatype → RRset
        self.names: dict[str, dict[int, dns.rrset.RRset]] = {}
        self.soa = self._make_soa()

    # ---- reading (server threads) ----

    def lookup(self, name: str) -> dict[int, dns.rrset.RRset] | None:
        """The RRsets at `name` (lower case, fully qualified), None when it holds none."""
        return self.names.get(name)

    def exists(self, name: str) -> bool:
        """`name` holds records or has some below it (an empty non-terminal)."""
        return name in self.names or self._below.get(name, 0) > 0

    # ---- writing (informer thread) ----

    def set_service(self, key: str, records: Iterable[Record]) -> None:
        """Replace what Service `key` (namespace/name) contributes."""
        new = sorted(set(records))
        with self._lock:
            old = self._by_service.get(key, [])
            if old == new:
                return
            if new:
                self._by_service[key] = new
            else:
                self._by_service.pop(key, None)
            self._account(old, -1)
            self._account(new, +1)
            changed = {r.name for r in old} | {r.name for r in new}
            for name in {r.name for r in old}:
                self._owners.get(name, {}).pop(key, None)
            for record in new:
                self._owners.setdefault(record.name, {}).setdefault(key, []).append(record)
            for name in changed:
                self._publish(name)
            self.soa = self._make_soa()

    def delete_service(self, key: str) -> None:
        self.set_service(key, ())

    def _account(self, records: list[Record], delta: int) -> None:
        for name in {r.name for r in records}:
            if not name.endswith("." + self.domain):
                continue
            labels = name[: -len(self.domain) - 1].split(".")
            for i in range(len(labels)):
                above = ".".join(labels[i:]) + "." + self.domain
                self._below[above] += delta
                if self._below[above] <= 0:
                    del self._below[above]

    def _publish(self, name: str) -> None:
        owners = self._owners.get(name)
        if not owners:
            self._owners.pop(name, None)
            self.names.pop(name, None)
            return
        owner = dns.name.from_text(name)
        rrsets: dict[int, dns.rrset.RRset] = {}
        for key in sorted(owners):  # the same RRsets whatever order the Services came in
            for record in owners[key]:
                rdtype = dns.rdatatype.from_text(record.rtype)
                rrset = rrsets.get(rdtype)
                if rrset is None:
                    rrset = rrsets[rdtype] = dns.rrset.RRset(owner, IN, rdtype)
                rrset.add(dns.rdata.from_text(IN, rdtype, record.data), self.ttl)
        self.names[name] = rrsets

    def _make_soa(self) -> dns.rrset.RRset:
        text = (f"ns.dns.{self.domain} hostmaster.{self.domain} {int(self._clock())} 7200 1800 86400 {self.ttl}")
        rrset = dns.rrset.RRset(self.origin, IN, dns.rdatatype.SOA)
        rrset.add(dns.rdata.from_text(IN, dns.rdatatype.SOA, text), self.ttl)
        return rrset
