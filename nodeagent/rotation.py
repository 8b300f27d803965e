"""Certificate rotation before expiry (upstream: k8s.io/client-go/util/certificate/certificate_manager.go
nextRotationDeadline, and the kubelet's client and serving certificate managers that use it).

As upstream, a certificate is renewed at a jittered 70–90% of its lifetime (notBefore + total × (0.7 + 0.2 ×
rand)), so a fleet of nodes whose certificates were issued together does not renew together; a failed
renewal is tried again after a back-off (doubling from 2 s to 5 min), and the old certificate serves until
then. `rotation_deadline` is pure; `Rotator` is the thread around a `renew` callable.
"""

from __future__ import annotations

import logging
import random
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from control.util import openssl

log = logging.getLogger(__name__)
BACKOFF_INITIAL, BACKOFF_MAX = 2.0, 300.0


@dataclass(frozen=True)
class Validity:
    not_before: float  # epoch seconds
    not_after: float


def validity(cert_file: str) -> Validity:
    """The certificate's validity period (openssl; OpenSSLError when it cannot be read)."""
    lines = dict(line.partition("=")[::2] for line in
                 openssl.run("x509", "-in", cert_file, "-noout", "-startdate", "-enddate").splitlines())
    return Validity(ssl.cert_time_to_seconds(lines["notBefore"].strip()),
                    ssl.cert_time_to_seconds(lines["notAfter"].strip()))


def rotation_deadline(period: Validity, fraction: float) -> float:
    """When to renew: notBefore + total × (0.7 + 0.2 × fraction), `fraction` in [0, 1) (random in use)."""
    total = period.not_after - period.not_before
    return period.not_before + total * (0.7 + 0.2 * fraction)


def needs_new(period: Validity | None, now: float) -> bool:
    """A certificate past its deadline's latest point (90% of its life) or unreadable is asked for anew at start."""
    return period is None or now >= rotation_deadline(period, 1.0) or now < period.not_before - 300


class Rotator:
    """Renews the certificate at `cert_file` through `renew` at each rotation deadline, until stopped."""

    def __init__(self, name: str, cert_file: str, renew: Callable[[threading.Event], None], *,
                 rand: Callable[[], float] = random.random, clock: Callable[[], float] = time.time) -> None:
        self.name = name
        self.cert_file = cert_file
        self.renew = renew
        self.rand = rand
        self.clock = clock
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"rotate-{name}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def _run(self) -> None:
        backoff = BACKOFF_INITIAL
        while not self._stop.is_set():
            try:
                deadline = rotation_deadline(validity(self.cert_file), self.rand())
            except (openssl.OpenSSLError, KeyError, ValueError):
                deadline = self.clock()
            log.info("%s certificate: rotation at %s", self.name, time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                                              time.gmtime(deadline)))
            if self._stop.wait(max(0.0, deadline - self.clock())):
                return
            try:
                self.renew(self._stop)
                backoff = BACKOFF_INITIAL
                log.info("%s certificate rotated", self.name)
            except Exception as exc:  # noqa: BLE001 - any failure: keep the old one, try again later
                log.warning("%s certificate rotation failed (again in %.0fs): %s", self.name, backoff, exc)
                if self._stop.wait(backoff):
                    return
                backoff = min(backoff * 2, BACKOFF_MAX)
