"""The service account controller: every active namespace has a `default` ServiceAccount, recreated if it
is deleted.

Upstream: pkg/controller/serviceaccount/serviceaccounts_controller.go (`ServiceAccountsToEnsure` =
["default"]; a ServiceAccount delete and a namespace add/update queue the namespace; `syncNamespace`
skips a namespace that is gone or not Active and creates each missing account, an AlreadyExists or a
NamespaceTerminating refusal being no error; one worker). Token issuance is not here (nothing issues tokens yet).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from control.api.typed import Namespace
from control.client.errors import NAMESPACE_TERMINATING_CAUSE, ApiError, Conflict, has_status_cause
from control.client.events import EventRecorder
from control.client.informer import InformerFactory
from control.client.paths import resource_path
from control.client.workqueue import RateLimitingQueue
from control.controllers.shared.base import APIClient, Controller

SERVICE_ACCOUNTS_TO_ENSURE = ("default",)


class ServiceAccountsController(Controller):
    name = "serviceaccount"  # upstream's controller name (--controllers alias of serviceaccount-controller)

    def __init__(self, client: APIClient, informers: InformerFactory, *, workers: int = 1,
                 queue: RateLimitingQueue[str] | None = None, recorder: EventRecorder | None = None) -> None:
        super().__init__(client, informers, workers=workers, queue=queue, recorder=recorder)
        namespaces = informers.informer("v1", "namespaces")
        accounts = informers.informer("v1", "serviceaccounts")
        self.namespaces, self.accounts = namespaces.lister(), accounts.lister()
        namespaces.add_event_handler(on_add=self.enqueue, on_update=self.enqueue_update)
        accounts.add_event_handler(on_delete=self.on_account_deleted)

    def on_account_deleted(self, account: Mapping[str, Any]) -> None:
        if account["metadata"]["name"] in SERVICE_ACCOUNTS_TO_ENSURE:
            self.queue.add(account["metadata"]["namespace"])

    def sync(self, key: str) -> None:
        namespace = self.namespaces.get(None, key)
        if namespace is None or (Namespace(namespace).status.phase or "Active") != "Active":
            return
        for name in SERVICE_ACCOUNTS_TO_ENSURE:
            if self.accounts.get(key, name) is not None:
                continue
            try:
                self.client.create(resource_path("v1", "serviceaccounts", namespace=key),
                                   {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}})
            except Conflict as exc:
                if exc.reason != "AlreadyExists":
                    raise
            except ApiError as exc:
                if not has_status_cause(exc, NAMESPACE_TERMINATING_CAUSE):
                    raise
