"""ServiceAccountsController and RootCACertPublisher (serviceaccounts/controller.py,
rootcacertpublisher/controller.py) running on the fake API server: every active namespace gets `default` and
`kube-root-ca.crt` (with upstream's description annotation), both put back after a delete, the ConfigMap's
data put back after an edit; a Terminating namespace gets nothing new."""

from __future__ import annotations

import threading

import pytest

from control.client.errors import NotFound
from control.client.informer import InformerFactory
from control.controllers.rootcacertpublisher.controller import DESCRIPTION, RootCACertPublisher
from control.controllers.serviceaccounts.controller import ServiceAccountsController
from tests.support.fake_apiserver import FakeAPIServer
from tests.support.polling import wait_until

CA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


@pytest.fixture
def cluster():
    api = FakeAPIServer()
    api.add({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "old"}, "status": {"phase": "Active"}})
    stop = threading.Event()
    factory = InformerFactory(api.client("informers"))
    controllers = [ServiceAccountsController(api.client("sa"), factory),
                   RootCACertPublisher(api.client("ca"), factory, root_ca=CA)]
    factory.start(stop)
    threads = [threading.Thread(target=c.run, args=(stop,), daemon=True) for c in controllers]
    for thread in threads:
        thread.start()
    yield api, api.client("user")
    stop.set()
    for thread in threads:
        thread.join(5)


def get(client, path):
    try:
        return client.get(path)
    except NotFound:
        return None


def test_every_namespace_gets_default_and_the_root_ca(cluster):
    api, client = cluster
    client.create("/api/v1/namespaces", {"metadata": {"name": "new"}, "status": {"phase": "Active"}})
    for ns in ("old", "new"):
        assert wait_until(lambda ns=ns: get(client, f"/api/v1/namespaces/{ns}/serviceaccounts/default"))
        configmap = wait_until(lambda ns=ns: get(client, f"/api/v1/namespaces/{ns}/configmaps/kube-root-ca.crt"))
        assert configmap["data"] == {"ca.crt": CA}
        assert configmap["metadata"]["annotations"] == {"kubernetes.io/description": DESCRIPTION}


def test_deleted_or_edited_objects_are_put_back(cluster):
    api, client = cluster
    sa, cm = "/api/v1/namespaces/old/serviceaccounts/default", "/api/v1/namespaces/old/configmaps/kube-root-ca.crt"
    first = wait_until(lambda: get(client, sa))
    assert wait_until(lambda: get(client, cm))
    client.delete(sa)
    assert wait_until(lambda: (get(client, sa) or first)["metadata"]["uid"] != first["metadata"]["uid"])
    client.patch(cm, {"data": {"ca.crt": "forged", "extra": "x"}, "metadata": {"annotations": {"mine": "y"}}})
    fixed = wait_until(lambda: get(client, cm)["data"] == {"ca.crt": CA} and get(client, cm))
    assert fixed["metadata"]["annotations"] == {"mine": "y", "kubernetes.io/description": DESCRIPTION}
    client.delete(cm)
    assert wait_until(lambda: get(client, cm))


def test_terminating_namespace_gets_no_service_account():
    api = FakeAPIServer()
    api.add({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "dying"},
             "status": {"phase": "Terminating"}})
    stop = threading.Event()
    factory = InformerFactory(api.client("informers"))
    controller = ServiceAccountsController(api.client("sa"), factory)
    factory.start(stop)
    try:
        assert factory.wait_for_sync(5)
        controller.sync("dying")
        controller.sync("gone")
        assert api.actions_of("sa", "create") == []
    finally:
        stop.set()
