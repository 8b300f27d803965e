"""The csrsigning controller (upstream pkg/controller/certificates/signer/signer.go): issues the certificate of
every approved CertificateSigningRequest for `kubernetes.io/kube-apiserver-client`,
`kubernetes.io/kube-apiserver-client-kubelet` and `kubernetes.io/kubelet-serving` from the cluster CA
(authority.py), after the signer's own checks (checks.py); a request that fails them gets upstream's
`Failed` condition (reason `SignerValidationFailure`) instead. Leaves one year, or `expirationSeconds`.

Approval is not decided here: the approvers (approver.py) or a user allowed to update
`certificatesigningrequests/approval` (`kubectl certificate approve`) approve, the API server keeps a signer
from approving its own writes (the `/status` subresource keeps the stored Approved/Denied conditions).
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from control.apimachinery.meta import deep_copy, format_timestamp
from control.client.informer import InformerFactory
from control.client.paths import resource_path
from control.controllers.certificates import checks, decisions, request
from control.controllers.certificates.authority import Authority, issue
from control.controllers.shared.base import APIClient, Controller

log = logging.getLogger(__name__)
API_VERSION = "certificates.k8s.io/v1"
PLURAL = "certificatesigningrequests"


def csr_informer(informers: InformerFactory) -> Any:
    return informers.informer(API_VERSION, PLURAL)


class CSRSigningController(Controller):
    name = "csrsigning"

    def __init__(self, client: APIClient, informers: InformerFactory, *, authority: Authority,
                 signer_duration: timedelta = decisions.DEFAULT_DURATION,
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        super().__init__(client, informers, workers=1)
        self.authority = authority
        self.signer_duration = signer_duration
        self.now = clock
        csrs = csr_informer(informers)
        self.csrs = csrs.lister()
        csrs.add_event_handler(on_add=self.enqueue, on_update=self.enqueue_update)

    def sync(self, key: str) -> None:
        csr = self.csrs.get(None, key)
        if csr is None or not decisions.should_sign(csr):
            return
        spec = decisions.spec(csr)
        usages = decisions.usages(csr)
        try:
            pem = request.pem_of(str(spec.get("request") or ""))
            parsed = request.parse(pem)
        except request.RequestError as exc:
            self._fail(csr, f"unable to parse csr {key!r}: {exc}")
            return
        if (error := checks.SIGNERS[str(spec.get("signerName"))](parsed, usages)) is not None:
            self._fail(csr, error)
            return
        now = self.now()
        certificate = issue(self.authority, pem, parsed, usages, now=now,
                            duration=decisions.duration(csr, self.signer_duration),
                            ca_not_after=self.authority.not_after())
        updated = deep_copy(dict(csr))
        updated.setdefault("status", {})["certificate"] = base64.b64encode(certificate.encode()).decode()
        self.client.update(resource_path(API_VERSION, PLURAL, name=key, subresource="status"), updated)
        log.info("signed %s for %s (%s)", key, parsed.common_name, spec.get("signerName"))

    def _fail(self, csr: Mapping[str, Any], message: str) -> None:
        updated = deep_copy(dict(csr))
        stamp = format_timestamp(self.now())
        updated.setdefault("status", {}).setdefault("conditions", []).append({
            "type": "Failed", "status": "True", "reason": "SignerValidationFailure", "message": message,
            "lastUpdateTime": stamp, "lastTransitionTime": stamp})
        name = str(csr["metadata"]["name"])
        self.client.update(resource_path(API_VERSION, PLURAL, name=name, subresource="status"), updated)
        log.info("refused to sign %s: %s", name, message)


