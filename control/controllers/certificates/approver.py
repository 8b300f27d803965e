"""The csrapproving controller (upstream pkg/controller/certificates/approver/sarapprove.go) for kubelet client
certificates, with node passwords (nodepassword.py), and slimkube's own approver of kubelet serving
certificates; the decisions are decisions.py's, this module does the I/O: SubjectAccessReviews for the
requester, the node password Secrets, the Node and the API server's own addresses, and the approval write
(`certificatesigningrequests/<name>/approval` with an Approved or Denied condition).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from control.apimachinery.meta import deep_copy, format_timestamp
from control.client.errors import Conflict, NotFound
from control.client.informer import InformerFactory
from control.client.paths import resource_path
from control.controllers.certificates import checks, decisions, nodepassword, request
from control.controllers.certificates.decisions import Decision, Verdict
from control.controllers.certificates.signer import API_VERSION, PLURAL, csr_informer
from control.controllers.shared.base import APIClient, Controller

log = logging.getLogger(__name__)


class CSRApprovingController(Controller):
    name = "csrapproving"

    def __init__(self, client: APIClient, informers: InformerFactory, *, cluster_domain: str = "cluster.local",
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        super().__init__(client, informers, workers=1)
        self.cluster_domain = cluster_domain
        self.now = clock
        csrs = csr_informer(informers)
        self.csrs = csrs.lister()
        csrs.add_event_handler(on_add=self.enqueue, on_update=self.enqueue_update)
        nodes = informers.informer("v1", "nodes")
        self.nodes = nodes.lister()
        nodes.add_event_handler(on_add=self._node_changed, on_update=lambda old, new: self._node_changed(new))

    def _node_changed(self, node: Mapping[str, Any]) -> None:
        """A serving request waits for its Node's addresses: look at the node's pending requests again."""
        wanted = checks.NODE_PREFIX + str(node["metadata"]["name"])
        for csr in self.csrs.list():
            if decisions.spec(csr).get("username") == wanted and decisions.undecided(csr):
                self.enqueue(csr)

    def sync(self, key: str) -> None:
        csr = self.csrs.get(None, key)
        if csr is None or not decisions.undecided(csr):
            return
        signer = decisions.spec(csr).get("signerName")
        if signer not in (checks.KUBELET_CLIENT, checks.KUBELET_SERVING):
            return
        try:
            parsed = request.parse(request.pem_of(str(decisions.spec(csr).get("request") or "")))
        except request.RequestError:
            return  # the signer fails it once approved; nothing to approve here
        if signer == checks.KUBELET_CLIENT:
            decision = self._kubelet_client(csr, parsed)
        else:
            node = self.nodes.get(None, decisions.node_name(parsed))
            decision = decisions.kubelet_serving(csr, parsed, node, apiserver_ips=self._apiserver_ips(),
                                                 cluster_domain=self.cluster_domain)
        if decision.verdict is not Verdict.LEAVE:
            self._write(csr, decision)

    def _kubelet_client(self, csr: Mapping[str, Any], parsed: request.ParsedRequest) -> Decision:
        for recogniser in decisions.client_recognisers(csr, parsed):
            allowed = self._allowed(csr, recogniser)
            recorded = None
            if recogniser == decisions.NODE_CLIENT and allowed:
                recorded = self._recorded_key(decisions.node_name(parsed))
            decision = decisions.kubelet_client(recogniser, allowed, parsed, recorded)
            if decision.record_key and not self._record_key(decisions.node_name(parsed), parsed.public_key_sha256):
                decision = decisions.kubelet_client(recogniser, allowed, parsed,
                                                    self._recorded_key(decisions.node_name(parsed)))
            if decision.verdict is not Verdict.LEAVE:
                return decision
        return decisions.LEAVE

    def _allowed(self, csr: Mapping[str, Any], subresource: str) -> bool:
        """upstream authorize(): a SubjectAccessReview as the requester for `create` on the subresource."""
        spec = decisions.spec(csr)
        review: dict[str, Any] = {
            "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {"user": spec.get("username") or "", "groups": list(spec.get("groups") or []),
                     "resourceAttributes": {"group": "certificates.k8s.io", "resource": PLURAL,
                                            "subresource": subresource, "verb": "create"}}}
        if spec.get("uid"):
            review["spec"]["uid"] = spec["uid"]
        if isinstance(spec.get("extra"), Mapping):
            review["spec"]["extra"] = dict(spec["extra"])
        answer = self.client.create(resource_path("authorization.k8s.io/v1", "subjectaccessreviews"), review)
        return bool((answer.get("status") or {}).get("allowed"))

    def _recorded_key(self, node: str) -> str | None:
        try:
            return nodepassword.recorded(self.client.get(resource_path(
                "v1", "secrets", namespace=nodepassword.NAMESPACE, name=nodepassword.secret_name(node))))
        except NotFound:
            return None

    def _record_key(self, node: str, fingerprint: str) -> bool:
        """Record the first join's node key; False when another join recorded one first."""
        try:
            self.client.create(resource_path("v1", "secrets", namespace=nodepassword.NAMESPACE),
                               nodepassword.secret(node, fingerprint))
        except Conflict as exc:
            if exc.reason != "AlreadyExists":
                raise
            return False
        log.info("node %s: node password recorded at its first join", node)
        return True

    def _apiserver_ips(self) -> set[str]:
        """The `kubernetes` Service's cluster IPs and its Endpoints' addresses."""
        ips: set[str] = set()
        try:
            service = self.client.get(resource_path("v1", "services", namespace="default", name="kubernetes"))
            service_spec = service.get("spec") or {}
            ips.update(str(ip) for ip in [service_spec.get("clusterIP"), *(service_spec.get("clusterIPs") or [])]
                       if ip)
        except NotFound:
            pass
        try:
            endpoints = self.client.get(resource_path("v1", "endpoints", namespace="default", name="kubernetes"))
            ips.update(str(address.get("ip")) for subset in endpoints.get("subsets") or []
                       for address in subset.get("addresses") or [] if address.get("ip"))
        except NotFound:
            pass
        return ips

    def _write(self, csr: Mapping[str, Any], decision: Decision) -> None:
        updated = deep_copy(dict(csr))
        stamp = format_timestamp(self.now())
        kind = "Approved" if decision.verdict is Verdict.APPROVE else "Denied"
        updated.setdefault("status", {}).setdefault("conditions", []).append({
            "type": kind, "status": "True", "reason": decision.reason, "message": decision.message,
            "lastUpdateTime": stamp, "lastTransitionTime": stamp})
        name = str(csr["metadata"]["name"])
        self.client.update(resource_path(API_VERSION, PLURAL, name=name, subresource="approval"), updated)
        log.info("%s %s: %s", kind.lower(), name, decision.message)
