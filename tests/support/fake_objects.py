"""ConfigMaps, Secrets, claims and volumes for the kubelet's object getter (nodeagent's env, volumes and pod
sync), in memory.

Keyed by (namespace, name), or by name alone for "this name in any namespace". Secret values may be given as
str or bytes and are returned base64-encoded, as the API server returns `data`. A missing object raises the
client's NotFound, as the real getter does. `calls` records every lookup (kind, namespace, name).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from control.client.errors import NotFound

Key = str | tuple[str, str]


class FakeObjects:
    def __init__(self, configmaps: Mapping[Key, Mapping[str, str]] | None = None,
                 secrets: Mapping[Key, Mapping[str, str | bytes]] | None = None,
                 secret_types: Mapping[Key, str] | None = None,
                 claims: Mapping[tuple[str, str], Mapping[str, Any]] | None = None,
                 volumes: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        self.configmaps = dict(configmaps or {})
        self.secrets = dict(secrets or {})
        self.secret_types = dict(secret_types or {})  # a secret's `type` where given (Opaque otherwise)
        self.claims = dict(claims or {})  # (namespace, name) → PersistentVolumeClaim
        self.volumes = dict(volumes or {})  # name → PersistentVolume
        self.calls: list[tuple[str, str, str]] = []

    @staticmethod
    def _find(table: Mapping[Key, Any], plural: str, namespace: str, name: str) -> Any:
        for key in ((namespace, name), name):
            if key in table:
                return table[key]
        raise NotFound(404, "NotFound", f'{plural} "{name}" not found')

    def get_configmap(self, namespace: str, name: str) -> dict[str, Any]:
        self.calls.append(("cm", namespace, name))
        data = self._find(self.configmaps, "configmaps", namespace, name)
        return {"metadata": {"name": name, "namespace": namespace}, "data": dict(data)}

    def get_secret(self, namespace: str, name: str) -> dict[str, Any]:
        self.calls.append(("secret", namespace, name))
        data = self._find(self.secrets, "secrets", namespace, name)
        encoded = {k: base64.b64encode(v if isinstance(v, bytes) else v.encode()).decode() for k, v in data.items()}
        kind = next((self.secret_types[k] for k in ((namespace, name), name) if k in self.secret_types), "Opaque")
        return {"metadata": {"name": name, "namespace": namespace}, "type": kind, "data": encoded}

    def get_persistent_volume_claim(self, namespace: str, name: str) -> dict[str, Any]:
        self.calls.append(("pvc", namespace, name))
        if (namespace, name) not in self.claims:
            raise NotFound(404, "NotFound", f'persistentvolumeclaims "{name}" not found')
        return dict(self.claims[(namespace, name)])

    def get_persistent_volume(self, name: str) -> dict[str, Any]:
        self.calls.append(("pv", "", name))
        if name not in self.volumes:
            raise NotFound(404, "NotFound", f'persistentvolumes "{name}" not found')
        return dict(self.volumes[name])
