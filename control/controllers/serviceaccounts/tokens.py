"""The tokens controller: fills legacy service account token Secrets.

Upstream: pkg/controller/serviceaccount/tokens_controller.go (as since 1.24: it no longer makes a Secret
for every ServiceAccount; it fills the ones users create). A Secret of type
`kubernetes.io/service-account-token` naming an account in its `kubernetes.io/service-account.name`
annotation gets

- `data.token`: a legacy JWT (issuer `kubernetes/serviceaccount`, no expiry, control/util/satoken.py),
- `data["ca.crt"]`: the cluster CA, `data.namespace`: its namespace,
- the `kubernetes.io/service-account.uid` annotation: the account's uid.

A Secret whose account is gone, or has another uid than the annotation says, is deleted (after a live GET
confirms what the cache says, as upstream does, with the Secret's uid as the precondition); so is every
token Secret of a deleted account. The API server accepts such a token only while its Secret holds it.

Departure: upstream queues the account and the Secret keys separately with their own retry limits; here
every change queues the affected Secrets' keys and one sync decides per Secret.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from cryptography.hazmat.primitives.asymmetric import rsa

from control.apimachinery.meta import deep_copy
from control.client.errors import Conflict, NotFound
from control.client.events import EventRecorder
from control.client.informer import InformerFactory
from control.client.paths import resource_path
from control.client.workqueue import RateLimitingQueue
from control.controllers.shared.base import APIClient, Controller
from control.util import satoken

TOKEN_TYPE = "kubernetes.io/service-account-token"
NAME_ANNOTATION = "kubernetes.io/service-account.name"
UID_ANNOTATION = "kubernetes.io/service-account.uid"


def wanted_data(secret: Mapping[str, Any], account: Mapping[str, Any], *, key: rsa.RSAPrivateKey,
                root_ca: str) -> dict[str, Any] | None:
    """The Secret as it should be for `account`, or None when it is complete already (a token that names
    this account and Secret is kept: re-signing would revoke what clients hold)."""
    meta, account_meta = secret.get("metadata") or {}, account.get("metadata") or {}
    namespace, name = meta.get("namespace", ""), meta.get("name", "")
    data = dict(secret.get("data") or {})
    annotations = dict(meta.get("annotations") or {})
    wanted_ca = base64.b64encode(root_ca.encode()).decode() if root_ca else None
    complete = (data.get("token") and data.get("namespace") == base64.b64encode(namespace.encode()).decode()
                and (wanted_ca is None or data.get("ca.crt") == wanted_ca)
                and annotations.get(UID_ANNOTATION) == account_meta.get("uid"))
    if complete:
        return None
    ref = satoken.Ref(account_meta.get("name", ""), account_meta.get("uid", ""))
    if not data.get("token"):
        token = satoken.sign(key, satoken.legacy_payload(namespace, ref, name))
        data["token"] = base64.b64encode(token.encode()).decode()
    data["namespace"] = base64.b64encode(namespace.encode()).decode()
    if wanted_ca is not None:
        data["ca.crt"] = wanted_ca
    updated = deep_copy(dict(secret))
    updated["data"] = data
    updated["metadata"]["annotations"] = {**annotations, UID_ANNOTATION: ref.uid}
    return updated


class TokensController(Controller):
    name = "serviceaccount-token"  # upstream's controller name

    def __init__(self, client: APIClient, informers: InformerFactory, *, key: rsa.RSAPrivateKey, root_ca: str = "",
                 workers: int = 1, queue: RateLimitingQueue[str] | None = None,
                 recorder: EventRecorder | None = None) -> None:
        super().__init__(client, informers, workers=workers, queue=queue, recorder=recorder)
        self.key, self.root_ca = key, root_ca
        secrets = informers.informer("v1", "secrets")
        accounts = informers.informer("v1", "serviceaccounts")
        self.secrets, self.accounts = secrets.lister(), accounts.lister()
        secrets.add_event_handler(on_add=self.on_secret, on_update=lambda old, new: self.on_secret(new))
        accounts.add_event_handler(on_add=self.on_account, on_update=lambda old, new: self.on_account(new),
                                   on_delete=self.on_account)

    def on_secret(self, secret: Mapping[str, Any]) -> None:
        if secret.get("type") == TOKEN_TYPE:
            self.enqueue(secret)

    def on_account(self, account: Mapping[str, Any]) -> None:
        meta = account.get("metadata") or {}
        for secret in self.secrets.list(meta.get("namespace", "")):
            if secret.get("type") == TOKEN_TYPE and \
                    ((secret.get("metadata") or {}).get("annotations") or {}).get(NAME_ANNOTATION) == meta.get("name"):
                self.enqueue(secret)

    def _live_account(self, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return self.client.get(resource_path("v1", "serviceaccounts", namespace=namespace, name=name))
        except NotFound:
            return None

    def sync(self, key: str) -> None:
        namespace, _, name = key.partition("/")
        secret = self.secrets.get(namespace, name)
        if secret is None or secret.get("type") != TOKEN_TYPE:
            return
        meta = secret.get("metadata") or {}
        annotations = meta.get("annotations") or {}
        account_name = annotations.get(NAME_ANNOTATION, "")
        account = self.accounts.get(namespace, account_name)
        wanted_uid = annotations.get(UID_ANNOTATION)
        if account is None or (wanted_uid and wanted_uid != account["metadata"].get("uid")):
            account = self._live_account(namespace, account_name) if account_name else None
            if account is None or (wanted_uid and wanted_uid != account["metadata"].get("uid")):
                try:
                    self.client.delete(resource_path("v1", "secrets", namespace=namespace, name=name),
                                       preconditions={"uid": meta.get("uid")})
                except (NotFound, Conflict):
                    pass
                return
        updated = wanted_data(secret, account, key=self.key, root_ca=self.root_ca)
        if updated is not None:
            self.client.update(resource_path("v1", "secrets", namespace=namespace, name=name), updated)
