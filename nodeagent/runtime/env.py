"""A container's environment, as upstream pkg/kubelet/kubelet_pods.go makeEnvironmentVariables.

Order of resolution, as upstream:

1. `envFrom` sources in order (configMapRef / secretRef, each with an optional `prefix`); later sources
   override earlier ones. Keys that are not valid variable names (`[-._a-zA-Z][-._a-zA-Z0-9]*`, after the
   prefix) are skipped and reported as an `InvalidEnvironmentVariableNames` warning with upstream's
   message (older upstream skipped them; newer upstream accepts any printable name — we keep the skip
   because Docker and shells choke on such names).
2. `env` in declaration order, overriding envFrom: a non-empty `value` has its `$(VAR)` references
   expanded against what is defined so far (envFrom plus earlier env entries; expansion.py); otherwise
   `valueFrom` is resolved: fieldRef / resourceFieldRef (downward.py), configMapKeyRef / secretKeyRef.
3. A missing ConfigMap or Secret, or a missing key, fails the container with CreateContainerConfigError
   and upstream's message (`couldn't find key K in ConfigMap NS/NAME`; the API's `configmaps "x" not
   found` for an object) unless the reference is `optional: true`, in which case the variable is left out.

4. Service environment variables (`FOO_SERVICE_HOST`, ...; service_env.py, computed by the caller from
   the kubelet's Service informer) come last and only where the name is still free: the container's
   own env and envFrom win. `$(VAR)` in env values can refer to them, as upstream's
   MappingFuncFor(tmpEnv, serviceEnv).

ConfigMaps and Secrets come through the `ObjectGetter` protocol (one API GET each, cached per call as
upstream does per container); Secret `data` values are base64 and decoded here.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from control.api.typed.core import ConfigMap, Pod, Secret
from control.client.errors import NotFound
from nodeagent.runtime.downward import UNKNOWN_NODE, DownwardAPIError, NodeFacts, field_value, resource_value
from nodeagent.runtime.expansion import expand, mapping_for

_ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")


class ObjectGetter(Protocol):
    """Fetches ConfigMaps, Secrets, PersistentVolumeClaims and PersistentVolumes; raises
    control.client.errors.NotFound when one does not exist."""

    def get_configmap(self, namespace: str, name: str) -> dict[str, Any]: ...

    def get_secret(self, namespace: str, name: str) -> dict[str, Any]: ...

    def get_persistent_volume_claim(self, namespace: str, name: str) -> dict[str, Any]: ...

    def get_persistent_volume(self, name: str) -> dict[str, Any]: ...


class CreateContainerConfigError(Exception):
    """The container cannot be configured; the status manager shows it as waiting with this reason."""

    reason = "CreateContainerConfigError"


@dataclass(frozen=True)
class EnvWarning:
    """Something worth a Warning event on the pod (reason, message as upstream)."""

    reason: str
    message: str


@dataclass(frozen=True)
class Environment:
    """The resolved variables in order (envFrom first, then env) and the warnings met on the way."""

    variables: tuple[tuple[str, str], ...]
    warnings: tuple[EnvWarning, ...] = ()

    def as_dict(self) -> dict[str, str]:
        return dict(self.variables)


def is_env_var_name(name: str) -> bool:
    """Upstream validation IsEnvVarName."""
    return bool(_ENV_NAME.match(name))


def decode_secret_data(secret: Mapping[str, Any]) -> dict[str, bytes]:
    """A Secret's `data`, base64-decoded."""
    decoded: dict[str, bytes] = {}
    view = Secret(secret)
    for key, value in view.data.items():
        try:
            decoded[key] = base64.b64decode(value or "", validate=True)
        except (binascii.Error, ValueError) as exc:
            name = view.metadata.name
            raise CreateContainerConfigError(f"secret {name} key {key} is not valid base64: {exc}") from exc
    return decoded


class _Objects:
    """ConfigMaps and Secrets fetched once per container, as upstream's per-call maps."""

    def __init__(self, getter: ObjectGetter, namespace: str) -> None:
        self._getter = getter
        self._namespace = namespace
        self._configmaps: dict[str, dict[str, str] | None] = {}
        self._secrets: dict[str, dict[str, bytes] | None] = {}

    def configmap(self, name: str, optional: bool) -> dict[str, str] | None:
        """The ConfigMap's data; None if it is missing and `optional`."""
        if name not in self._configmaps:
            try:
                obj = self._getter.get_configmap(self._namespace, name)
            except NotFound as exc:
                if optional:
                    return None
                raise CreateContainerConfigError(exc.message or f'configmap "{name}" not found') from exc
            self._configmaps[name] = {k: str(v) for k, v in ConfigMap(obj).data.items()}
        return self._configmaps[name]

    def secret(self, name: str, optional: bool) -> dict[str, bytes] | None:
        """The Secret's decoded data; None if it is missing and `optional`."""
        if name not in self._secrets:
            try:
                obj = self._getter.get_secret(self._namespace, name)
            except NotFound as exc:
                if optional:
                    return None
                raise CreateContainerConfigError(exc.message or f'secret "{name}" not found') from exc
            self._secrets[name] = decode_secret_data(obj)
        return self._secrets[name]


def _from_sources(container: Mapping[str, Any], objects: _Objects, namespace: str,
                  env: dict[str, str], warnings: list[EnvWarning]) -> None:
    for source in container.get("envFrom") or []:
        prefix = source.get("prefix") or ""
        if source.get("configMapRef"):
            ref, kind = source["configMapRef"], "configMap"
            data = objects.configmap(ref.get("name", ""), bool(ref.get("optional")))
            values = None if data is None else dict(data)
        elif source.get("secretRef"):
            ref, kind = source["secretRef"], "secret"
            raw = objects.secret(ref.get("name", ""), bool(ref.get("optional")))
            values = None if raw is None else {k: v.decode("utf-8", "replace") for k, v in raw.items()}
        else:
            continue
        if values is None:
            continue
        invalid = []
        for key, value in values.items():
            if not is_env_var_name(prefix + key):
                invalid.append(prefix + key)
                continue
            env[prefix + key] = value
        if invalid:
            warnings.append(EnvWarning(
                "InvalidEnvironmentVariableNames",
                f"Keys [{', '.join(sorted(invalid))}] from the EnvFrom {kind} {namespace}/{ref.get('name', '')} "
                "were skipped since they are considered invalid environment variable names.",
            ))


def _value_from(source: Mapping[str, Any], pod: Mapping[str, Any], container: Mapping[str, Any],
                objects: _Objects, namespace: str, pod_ips: Sequence[str], node: NodeFacts) -> str | None:
    """One `valueFrom`; None when an optional reference is missing (the variable is then left out)."""
    try:
        if source.get("fieldRef"):
            return field_value(pod, source["fieldRef"].get("fieldPath", ""), pod_ips=pod_ips, node=node)
        if source.get("resourceFieldRef"):
            return resource_value(source["resourceFieldRef"], container, pod=pod, node=node)
    except DownwardAPIError as exc:
        raise CreateContainerConfigError(str(exc)) from exc
    if source.get("configMapKeyRef"):
        ref = source["configMapKeyRef"]
        optional = bool(ref.get("optional"))
        data = objects.configmap(ref.get("name", ""), optional)
        if data is None:
            return None
        if ref.get("key") not in data:
            if optional:
                return None
            raise CreateContainerConfigError(
                f"couldn't find key {ref.get('key')} in ConfigMap {namespace}/{ref.get('name', '')}")
        return data[ref["key"]]
    if source.get("secretKeyRef"):
        ref = source["secretKeyRef"]
        optional = bool(ref.get("optional"))
        raw = objects.secret(ref.get("name", ""), optional)
        if raw is None:
            return None
        if ref.get("key") not in raw:
            if optional:
                return None
            raise CreateContainerConfigError(
                f"couldn't find key {ref.get('key')} in Secret {namespace}/{ref.get('name', '')}")
        return raw[ref["key"]].decode("utf-8", "replace")
    return ""


def make_environment(pod: Mapping[str, Any], container: Mapping[str, Any], getter: ObjectGetter, *,
                     pod_ips: Sequence[str] = (), node: NodeFacts = UNKNOWN_NODE,
                     service_env: Mapping[str, str] | None = None) -> Environment:
    """Resolve `container`'s envFrom and env, then add `service_env` where free (see the module notes);
    raises CreateContainerConfigError."""
    namespace = Pod(pod).metadata.namespace or "default"
    objects = _Objects(getter, namespace)
    env: dict[str, str] = {}
    warnings: list[EnvWarning] = []
    services = dict(service_env or {})
    _from_sources(container, objects, namespace, env, warnings)
    for var in container.get("env") or []:
        name = var.get("name", "")
        if var.get("value"):
            value: str | None = expand(str(var["value"]), mapping_for(env, services))
        elif var.get("valueFrom"):
            value = _value_from(var["valueFrom"], pod, container, objects, namespace, pod_ips, node)
        else:
            value = ""
        if value is not None:
            env[name] = value
    extra = [(name, value) for name, value in services.items() if name not in env]
    return Environment((*env.items(), *extra), tuple(warnings))
