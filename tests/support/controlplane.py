"""A real API server with the controller manager running against it, for the controllers' integration
tests (the shape of `slimkube server` without the scheduler's binding getting in the way of what a test
asserts), and a fresh namespace per test so tests sharing one server do not see each other's objects."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from control.client.kubeconfig import load_kubeconfig
from control.client.rest import RESTClient
from control.controllers.manager import ControllerManager
from tests.support.apiserver import Endpoint, running_server


@contextmanager
def server_with_controllers(data_dir: str) -> Iterator[tuple[RESTClient, Endpoint]]:
    """An API server on 127.0.0.1 and every controller; a client for it; all stopped at the block's end."""
    with running_server(data_dir) as endpoint, RESTClient.from_kubeconfig(endpoint.kubeconfig) as rest:
        manager = ControllerManager(load_kubeconfig(endpoint.kubeconfig))
        manager.start()
        try:
            yield rest, endpoint
        finally:
            manager.stop()


def new_namespace(client: RESTClient) -> str:
    name = f"t-{uuid.uuid4().hex[:8]}"
    client.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return name
