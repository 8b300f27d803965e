"""The served groups' server side: CertificateSigningRequest strategy (requester, approval, status),
generation and status rules of the networking/storage kinds, their Table cells, the APIService
autoregistration and componentstatuses."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime

import pytest

from control.apiserver.authentication import tokens as authn
from control.apiserver.controlplane import autoregister
from control.apiserver.endpoints import printers, tables
from control.apiserver.registry import componentstatus
from control.apiserver.registry.store import Registry
from control.apiserver.registry.strategies import strategy_for
from control.apiserver.registry.strategies.certificates import CertificateSigningRequestStrategy
from control.apiserver.resources import by_path
from control.apiserver.status import APIError
from control.storage.sqlite import SQLiteStorage
from tests.unit.api.test_validation_groups import VALID

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
LATER = datetime(2026, 1, 2, 4, 0, 0, tzinfo=UTC)
CSRS = by_path("certificates.k8s.io", "v1", "certificatesigningrequests")
INGRESSES = by_path("networking.k8s.io", "v1", "ingresses")
API_SERVICES = by_path("apiregistration.k8s.io", "v1", "apiservices")
VOLUME_ATTACHMENTS = by_path("storage.k8s.io", "v1", "volumeattachments")


@pytest.fixture
def registry(tmp_path):
    storage = SQLiteStorage(str(tmp_path / "state.db"))
    yield Registry(storage, clock=lambda: NOW)
    storage.close()


def _csr_strategy() -> CertificateSigningRequestStrategy:
    assert CSRS is not None
    return CertificateSigningRequestStrategy(CSRS, clock=lambda: LATER)


def test_csr_create_records_the_requester_not_what_the_client_claims():
    csr = {**VALID["certificatesigningrequests"], "status": {"certificate": "Zm9v"}}
    csr = {**csr, "spec": {**csr["spec"], "username": "system:kube-controller-manager", "groups": ["system:masters"]}}
    token = authn.current_user.set(authn.UserInfo("alice", uid="u-7", groups=("devs",)))
    try:
        _csr_strategy().prepare_for_create(csr, now=NOW, uid="u-1")
    finally:
        authn.current_user.reset(token)
    assert csr["spec"]["username"] == "alice" and csr["spec"]["uid"] == "u-7"
    assert csr["spec"]["groups"] == ["devs", "system:authenticated"]
    assert csr["status"] == {}


def test_csr_approval_changes_only_conditions_and_status_keeps_approval():
    strategy = _csr_strategy()
    old = {**VALID["certificatesigningrequests"], "status": {}}
    sent = {**old, "spec": {**old["spec"], "signerName": "evil.example.com/x"}, "metadata": {"name": "alice"},
            "status": {"certificate": "Zm9v", "conditions": [{"type": "Approved", "reason": "KubectlApprove"}]}}
    approved = strategy.prepare_for_subresource_update("approval", sent, old)
    assert approved["spec"] == old["spec"] and "certificate" not in approved["status"]
    assert approved["status"]["conditions"] == [{"type": "Approved", "reason": "KubectlApprove", "status": "True",
                                                 "lastUpdateTime": "2026-01-02T04:00:00Z",
                                                 "lastTransitionTime": "2026-01-02T04:00:00Z"}]
    signer = {**approved, "status": {"certificate": "Zm9v", "conditions": [{"type": "Failed", "status": "True"}]}}
    issued = strategy.prepare_for_subresource_update("status", signer, approved)
    assert [c["type"] for c in issued["status"]["conditions"]] == ["Approved", "Failed"]
    assert issued["status"]["certificate"] == "Zm9v"
    with pytest.raises(APIError):
        strategy.prepare_for_subresource_update("scale", sent, old)


def test_csr_update_of_the_main_resource_keeps_spec():
    strategy = _csr_strategy()
    old = {**VALID["certificatesigningrequests"], "status": {"conditions": [{"type": "Approved"}]}}
    new = {**old, "metadata": {**old["metadata"], "labels": {"a": "b"}}, "spec": {"request": "x"}, "status": {}}
    strategy.prepare_for_update(new, old)
    assert new["spec"] == old["spec"] and new["status"] == old["status"] and new["metadata"]["labels"] == {"a": "b"}


def test_ingress_generation_and_status(registry):
    registry.create(by_path("", "v1", "namespaces"), "", {"metadata": {"name": "default"}})
    created = registry.create(INGRESSES, "default", {**VALID["ingresses"], "status": {"loadBalancer": {
        "ingress": [{"ip": "192.0.2.1"}]}}})
    assert created["metadata"]["generation"] == 1 and created["status"] == {"loadBalancer": {}}
    created["spec"]["rules"][0]["host"] = "bar.example.com"
    updated, _ = registry.update(INGRESSES, "default", "a", created)
    assert updated["metadata"]["generation"] == 2
    updated["status"] = {"loadBalancer": {"ingress": [{"ip": "192.0.2.1"}]}}
    with_status, _ = registry.update(INGRESSES, "default", "a", updated, subresource="status")
    assert with_status["status"]["loadBalancer"]["ingress"] == [{"ip": "192.0.2.1"}]
    assert with_status["metadata"]["generation"] == 2


def test_volume_attachment_status_starts_detached(registry):
    created = registry.create(VOLUME_ATTACHMENTS, "", {**VALID["volumeattachments"], "status": {"attached": True}})
    assert created["status"] == {"attached": False}


@pytest.mark.parametrize(("plural", "obj", "cells"), [
    pytest.param("ingresses", {**VALID["ingresses"], "status": {"loadBalancer": {"ingress": [
        {"ip": "192.0.2.1"}, {"hostname": "lb.example.com"}]}}},
        ["a", "nginx", "foo.example.com", "192.0.2.1,lb.example.com", "80, 443"], id="ingress"),
    pytest.param("ingresses", {"metadata": {"name": "b"}, "spec": {"rules": [{}, {"host": "x"}, {"host": "y"},
                                                                               {"host": "z"}]}},
        ["b", "<none>", "x,y + 1 more...", "", "80"], id="ingress-more-hosts"),
    pytest.param("ingressclasses", {"metadata": {"name": "c"}, "spec": {"controller": "k8s.io/nginx", "parameters": {
        "apiGroup": "k8s.example.com", "kind": "IngressParameters", "name": "p"}}},
        ["c", "k8s.io/nginx", "IngressParameters.k8s.example.com/p"], id="ingressclass"),
    pytest.param("networkpolicies", VALID["networkpolicies"], ["a", "app=db"], id="netpol"),
    pytest.param("networkpolicies", {"metadata": {"name": "all"}, "spec": {"podSelector": {}}}, ["all", "<none>"],
                 id="netpol-all"),
    pytest.param("runtimeclasses", VALID["runtimeclasses"], ["gvisor", "runsc"], id="runtimeclass"),
    pytest.param("csinodes", VALID["csinodes"], ["node-1", 1], id="csinode"),
    pytest.param("volumeattachments", VALID["volumeattachments"], ["va", "csi.example.com", "pv-1", "node-1", False],
                 id="volumeattachment"),
    pytest.param("validatingwebhookconfigurations", VALID["validatingwebhookconfigurations"], ["policy", 1],
                 id="webhooks"),
])
def test_cells(plural, obj, cells):
    resource = next(r for r in tables.PRINTERS if r[1] == plural)
    printer = tables.PRINTERS[resource]
    row = printer.cells(obj, NOW)
    assert len(row) == len(printer.columns)
    assert row[:len(cells)] == cells


def test_csr_and_csi_driver_cells():
    csr = {**VALID["certificatesigningrequests"], "metadata": {"name": "alice", "creationTimestamp":
                                                                "2026-01-02T03:00:00Z"}}
    csr["spec"] = {**csr["spec"], "username": "system:admin"}
    assert printers.certificate_signing_request_cells(csr, NOW) == [
        "alice", "4m5s", "kubernetes.io/kube-apiserver-client", "system:admin", "60m", "Pending"]
    csr["status"] = {"conditions": [{"type": "Approved"}, {"type": "Denied"}, {"type": "Failed"}],
                     "certificate": "Zm9v"}
    assert printers.csr_condition(csr) == "Denied,Failed,Issued"
    assert printers.csi_driver_cells({"metadata": {"name": "d"}, "spec": {"tokenRequests": [{"audience": "vault"}],
                                                                          "volumeLifecycleModes": ["Ephemeral"]}},
                                     NOW)[:7] == ["d", True, False, False, "vault", False, "Ephemeral"]


def test_api_service_cells():
    assert printers.api_service_cells({"metadata": {"name": "v1.apps"}, "spec": {}}, NOW)[:3] == \
        ["v1.apps", "Local", "Unknown"]
    remote = {"metadata": {"name": "v1beta1.metrics.k8s.io"},
              "spec": {"service": {"namespace": "kube-system", "name": "metrics-server"}},
              "status": {"conditions": [{"type": "Available", "status": "False", "reason": "MissingEndpoints"}]}}
    assert printers.api_service_cells(remote, NOW)[:3] == ["v1beta1.metrics.k8s.io", "kube-system/metrics-server",
                                                           "False (MissingEndpoints)"]


def test_autoregister_creates_repairs_and_marks_available(registry):
    registry.create(API_SERVICES, "", {"metadata": {"name": "v1.apps"}, "spec": {
        "group": "apps", "version": "v1", "groupPriorityMinimum": 5, "versionPriority": 5}})
    autoregister.register(registry, [("", "v1"), ("apps", "v1"), ("example.com", "v1")], now="2026-01-02T03:04:05Z")
    core = registry.must_get(API_SERVICES, "", "v1.")
    assert core["spec"] == {"group": "", "version": "v1", "groupPriorityMinimum": 18000, "versionPriority": 1}
    assert core["status"]["conditions"] == [{**autoregister.LOCAL_AVAILABLE,
                                             "lastTransitionTime": "2026-01-02T03:04:05Z"}]
    apps = registry.must_get(API_SERVICES, "", "v1.apps")
    assert apps["spec"]["groupPriorityMinimum"] == 17800
    assert apps["metadata"]["labels"] == {autoregister.AUTOMANAGED_LABEL: "onstart"}
    assert registry.must_get(API_SERVICES, "", "v1.example.com")["spec"]["groupPriorityMinimum"] == 1000
    revision = registry.must_get(API_SERVICES, "", "v1.apps")["metadata"]["resourceVersion"]
    autoregister.register(registry, [("apps", "v1")], now="2026-01-03T00:00:00Z")  # nothing to do: no write
    assert registry.must_get(API_SERVICES, "", "v1.apps")["metadata"]["resourceVersion"] == revision


def test_component_statuses_run_the_registered_checks():
    components = componentstatus.ComponentStatuses()
    components.register("etcd-0", lambda: None)
    components.register("scheduler", lambda: "connection refused")

    def boom() -> str | None:
        raise OSError("no such socket")

    components.register("controller-manager", boom)
    listed = asyncio.run(components.list())
    assert [c["metadata"]["name"] for c in listed] == ["scheduler", "controller-manager", "etcd-0"]
    assert listed[0]["conditions"] == [{"type": "Healthy", "status": "False", "error": "connection refused"}]
    assert listed[1]["conditions"][0]["error"] == "OSError: no such socket"
    assert listed[2]["conditions"] == [{"type": "Healthy", "status": "True", "message": "ok"}]
    assert printers.component_status_cells(listed[2], NOW) == ["etcd-0", "Healthy", "ok", ""]
    assert printers.component_status_cells(listed[0], NOW) == ["scheduler", "Unhealthy", "", "connection refused"]
    with pytest.raises(APIError) as missing:
        asyncio.run(components.get("kubelet"))
    assert missing.value.code == 404


def test_a_hanging_check_is_unhealthy_after_the_timeout(monkeypatch):
    monkeypatch.setattr(componentstatus, "TIMEOUT", 0.05)
    components = componentstatus.ComponentStatuses()
    components.register("scheduler", lambda: time.sleep(0.5))
    assert asyncio.run(components.get("scheduler"))["conditions"][0]["error"] == "no answer within 0.05s"
    assert strategy_for(API_SERVICES).resets_status_on_create
