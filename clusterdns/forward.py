"""Names outside the cluster domain: forwarded to the node's own resolvers (CoreDNS `forward .
/etc/resolv.conf`).

The servers are the node's resolv.conf nameservers (control/util/resolvconf.py: systemd-resolved's real list
when /etc/resolv.conf names only its loopback stub), loopback ones dropped: a stub on 127.0.0.53 may be
fine, but a loopback server could as well be this very DNS (a node whose resolv.conf points at the cluster
DNS), and CoreDNS's `loop` plugin exists because that loop takes a node down. The file is read again when it
changes (checked at most every 5 s), as CoreDNS's forward plugin does not but its `reload` effectively does.

Each server is tried in order (UDP, then TCP when the answer is truncated or the client asked over TCP),
2 s each; none answering → SERVFAIL.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable

import dns.exception
import dns.message
import dns.query
import dns.rcode

from control.util import resolvconf

log = logging.getLogger(__name__)
TIMEOUT = 2.0
RECHECK_SECONDS = 5.0


class Forwarder:
    def __init__(self, resolv_conf: str = resolvconf.HOST_RESOLV_CONF, *, timeout: float = TIMEOUT,
                 servers: tuple[str, ...] | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        """`servers`, when given, replace the resolv.conf's (loopback ones included: tests' fake upstreams)."""
        self.resolv_conf = resolv_conf
        self._fixed = servers
        self.timeout = timeout
        self._clock = clock
        self._lock = threading.Lock()
        self._checked = float("-inf")
        self._stamp: tuple[str, float] | None = None
        self._servers: tuple[str, ...] = ()

    def servers(self) -> tuple[str, ...]:
        if self._fixed is not None:
            return self._fixed
        with self._lock:
            now = self._clock()
            if now - self._checked >= RECHECK_SECONDS:
                self._checked = now
                path = resolvconf.node_resolv_conf_path(self.resolv_conf)
                try:
                    stamp = (path, os.stat(path).st_mtime)
                except OSError:
                    stamp = (path, 0.0)
                if stamp != self._stamp:
                    self._stamp = stamp
                    self._servers = resolvconf.read(path).without_loopback().nameservers
                    log.info("cluster DNS forwards other names to %s (from %s)",
                             ", ".join(self._servers) or "nowhere", path)
            return self._servers

    def forward(self, query: dns.message.Message, *, tcp: bool = False) -> dns.message.Message:
        for server in self.servers():
            host, _, port = server.partition("#")  # "address#port", as dig and dnsmasq write it
            try:
                if tcp:
                    return dns.query.tcp(query, host, timeout=self.timeout, port=int(port or 53))
                response, _ = dns.query.udp_with_fallback(query, host, timeout=self.timeout, port=int(port or 53))
                return response
            except (dns.exception.DNSException, OSError) as exc:
                log.debug("forwarding %s to %s failed: %s", query.question, server, exc)
        response = dns.message.make_response(query)
        response.set_rcode(dns.rcode.SERVFAIL)
        return response
