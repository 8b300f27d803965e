"""ServiceAccount admission (upstream: plugin/pkg/admission/serviceaccount/admission.go), a mutating plugin
on pod creation.

- A pod without `serviceAccountName` runs as `default`.
- The service account must exist: 403 `error looking up service account <ns>/<name>: serviceaccount
  "<name>" not found` otherwise. `default` is looked up 10 times, 100-200 ms apart, as upstream does,
  because the service account controller creates it just after its namespace.
- Unless `automountServiceAccountToken` is false (the pod's setting wins over the account's), the pod gets
  the projected volume `kube-api-access-<5 random characters>` (a `serviceAccountToken` source of 3607 s at
  `token`, `ca.crt` from the ConfigMap `kube-root-ca.crt`, and `namespace` from the downward API; mode
  0644), mounted read-only at /var/run/secrets/kubernetes.io/serviceaccount in every init and app container
  that mounts nothing there already. A pod that has a `kube-api-access-*` volume keeps it (it is mounted
  where missing, not added twice).
- Mirror pods (the kubelet's copies of static pods) are left alone, except that they may not name a
  service account (403 `a mirror pod may not reference service accounts`): the kubelet cannot get them a
  token.

Departures: upstream's LimitSecretReferences (off by default) and the ephemeral-container update path are
not implemented.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

from control.apiserver.admission.chain import Attributes, Operation, Reader, forbidden
from control.apiserver.resources import by_path

SERVICE_ACCOUNTS = by_path("", "v1", "serviceaccounts")
DEFAULT_SERVICE_ACCOUNT = "default"
VOLUME_PREFIX = "kube-api-access-"
MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
TOKEN_EXPIRATION_SECONDS = 3607  # upstream serviceaccount.WarnOnlyBoundTokenExpirationSeconds
ROOT_CA_CONFIGMAP = "kube-root-ca.crt"
MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"
DEFAULT_LOOKUPS = 10
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # upstream's SimpleNameGenerator alphabet (no vowels)


def random_suffix(length: int = 5) -> str:
    return "".join(random.choice(_NAME_ALPHABET) for _ in range(length))


def token_volume(name: str) -> dict[str, Any]:
    """The projected volume upstream's plugin adds (createVolume)."""
    return {"name": name, "projected": {"defaultMode": 0o644, "sources": [
        {"serviceAccountToken": {"expirationSeconds": TOKEN_EXPIRATION_SECONDS, "path": "token"}},
        {"configMap": {"name": ROOT_CA_CONFIGMAP, "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace",
                                    "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}}


def should_automount(pod_spec: dict[str, Any], account: dict[str, Any]) -> bool:
    """The pod's automountServiceAccountToken if set, else the account's, else true."""
    if isinstance(pod_spec.get("automountServiceAccountToken"), bool):
        return bool(pod_spec["automountServiceAccountToken"])
    setting = account.get("automountServiceAccountToken")
    return setting if isinstance(setting, bool) else True


def mount_token(pod_spec: dict[str, Any], volume_name: str) -> None:
    """Add the token volume (named `volume_name` unless one exists) and its mount to the containers that
    lack a mount at the service account path (upstream mountServiceAccountToken), in place."""
    existing = next((v.get("name") for v in pod_spec.get("volumes") or [] if isinstance(v, dict)
                     and str(v.get("name", "")).startswith(VOLUME_PREFIX)), None)
    name = existing or volume_name
    needed = False
    for key in ("initContainers", "containers"):
        for container in pod_spec.get(key) or []:
            if not isinstance(container, dict):
                continue
            mounts = container.get("volumeMounts") or []
            if any(isinstance(m, dict) and m.get("mountPath") == MOUNT_PATH for m in mounts):
                continue
            container["volumeMounts"] = [*mounts, {"name": name, "readOnly": True, "mountPath": MOUNT_PATH}]
            needed = True
    if needed and existing is None:
        pod_spec["volumes"] = [*(pod_spec.get("volumes") or []), token_volume(name)]


class ServiceAccount:
    name = "ServiceAccount"

    def __init__(self, reader: Reader, *, lookups: int = DEFAULT_LOOKUPS,
                 sleep: Callable[[float], None] = time.sleep, suffix: Callable[[], str] = random_suffix) -> None:
        self._reader = reader
        self._lookups = lookups
        self._sleep = sleep
        self._suffix = suffix

    def _account(self, namespace: str, name: str) -> dict[str, Any] | None:
        assert SERVICE_ACCOUNTS is not None
        attempts = self._lookups if name == DEFAULT_SERVICE_ACCOUNT else 1
        interval = random.uniform(0.1, 0.2)
        for attempt in range(attempts):
            if attempt:
                self._sleep(interval)
            if (found := self._reader.get(SERVICE_ACCOUNTS, namespace, name)) is not None:
                return found
        return None

    def admit(self, attributes: Attributes) -> None:
        obj = attributes.obj
        if (attributes.resource.plural != "pods" or attributes.resource.group or attributes.subresource
                or attributes.operation is not Operation.CREATE or obj is None):
            return
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        pod_name = attributes.generate_name or attributes.name
        annotations = (obj.get("metadata") or {}).get("annotations") or {}
        if isinstance(annotations, dict) and MIRROR_POD_ANNOTATION in annotations:
            if spec.get("serviceAccountName") or spec.get("serviceAccount"):
                raise forbidden(attributes.resource, pod_name, "a mirror pod may not reference service accounts")
            return
        name = spec.get("serviceAccountName") or spec.get("serviceAccount") or DEFAULT_SERVICE_ACCOUNT
        spec["serviceAccountName"] = name
        account = self._account(attributes.namespace, str(name))
        if account is None:
            raise forbidden(attributes.resource, pod_name, f"error looking up service account "
                            f'{attributes.namespace}/{name}: serviceaccount "{name}" not found')
        if should_automount(spec, account):
            mount_token(spec, VOLUME_PREFIX + self._suffix())
