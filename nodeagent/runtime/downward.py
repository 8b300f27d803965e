"""The downward API's values: `fieldRef` (pod fields) and `resourceFieldRef` (container resources), shared
by env vars (env.py) and downwardAPI volumes (nodeagent/volumes/).

Upstream: pkg/kubelet/kubelet_pods.go podFieldSelectorRuntimeValue, pkg/fieldpath/fieldpath.go
(ExtractFieldPathAsString, FormatMap), pkg/api/v1/resource/helpers.go (ExtractContainerResourceValue,
convertResourceCPUToString, convertResourceMemoryToString) and kubelet_resources.go
defaultPodLimitsForDownwardAPI (a limit the container does not set reads as the node's allocatable).

Facts kept from upstream:

* `metadata.labels` / `metadata.annotations` as a whole print as sorted `key="value"` lines (FormatMap),
  one key as `metadata.labels['key']` ("" when absent).
* `status.podIPs` / `status.hostIPs` are comma-joined; `spec.terminationGracePeriodSeconds` defaults to 30.
* CPU values are `ceil(milli / divisor milli)`, memory and storage `ceil(value / divisor)`; a divisor of 0
  or none means 1. So a 500m limit reads "1" with the default divisor and "500" with divisor "1m".
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from control.api.typed.core import Container
from control.apimachinery.quantity import Quantity

_SUBSCRIPT = re.compile(r"^(metadata\.(?:labels|annotations))\[(.+)\]$")


class DownwardAPIError(ValueError):
    """A fieldRef/resourceFieldRef the kubelet cannot resolve (upstream returns these as errors)."""


@dataclass(frozen=True)
class NodeFacts:
    """What the downward API needs from the node: its IPs and allocatable resources (the default for a
    limit a container leaves unset)."""

    host_ips: tuple[str, ...] = ()
    allocatable: Mapping[str, str] = field(default_factory=dict)


UNKNOWN_NODE = NodeFacts()  # the default: no host IPs, nothing allocatable known


def _format_map(values: Mapping[str, str]) -> str:
    """Upstream FormatMap: sorted `key="value"` lines, values quoted as Go's %q would."""
    return "\n".join(f"{key}={json.dumps(values[key], ensure_ascii=False)}" for key in sorted(values))


def _subscript_key(raw: str) -> str:
    """`'key'` or `"key"` inside the brackets of `metadata.labels['key']`."""
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
        return raw[1:-1]
    raise DownwardAPIError(f"invalid key subscript in fieldPath: {raw}")


def field_value(pod: Mapping[str, Any], field_path: str, *, pod_ips: Sequence[str] = (),
                node: NodeFacts = UNKNOWN_NODE) -> str:
    """The value of one `fieldRef.fieldPath` for `pod`, as upstream podFieldSelectorRuntimeValue."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    subscript = _SUBSCRIPT.match(field_path)
    if subscript:
        mapping = meta.get(subscript.group(1).split(".")[1]) or {}
        return str(mapping.get(_subscript_key(subscript.group(2)), ""))
    simple = {
        "metadata.name": meta.get("name", ""),
        "metadata.namespace": meta.get("namespace", ""),
        "metadata.uid": meta.get("uid", ""),
        "spec.nodeName": spec.get("nodeName", ""),
        "spec.serviceAccountName": spec.get("serviceAccountName", ""),
        "status.podIP": pod_ips[0] if pod_ips else "",
        "status.podIPs": ",".join(pod_ips),
        "status.hostIP": node.host_ips[0] if node.host_ips else "",
        "status.hostIPs": ",".join(node.host_ips),
    }
    if field_path in simple:
        return str(simple[field_path] or "")
    if field_path == "spec.terminationGracePeriodSeconds":
        grace = spec.get("terminationGracePeriodSeconds")
        return str(30 if grace is None else grace)
    if field_path in ("metadata.labels", "metadata.annotations"):
        return _format_map(meta.get(field_path.split(".")[1]) or {})
    raise DownwardAPIError(f"unsupported fieldPath: {field_path}")


def _container_named(pod: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    spec = pod.get("spec") or {}
    container: Mapping[str, Any]
    for container in list(spec.get("containers") or []) + list(spec.get("initContainers") or []):
        if container.get("name") == name:
            return container
    raise DownwardAPIError(f"container {name} not found")


def resource_value(selector: Mapping[str, Any], container: Mapping[str, Any], *,
                   pod: Mapping[str, Any] | None = None, node: NodeFacts = UNKNOWN_NODE) -> str:
    """The value of one `resourceFieldRef` (`resource`, `divisor`, optional `containerName`).

    `limits.*` the container leaves unset read as the node's allocatable, as upstream."""
    if selector.get("containerName") and pod is not None:
        container = _container_named(pod, selector["containerName"])
    resource = str(selector.get("resource", ""))
    kind, _, name = resource.partition(".")
    if kind not in ("limits", "requests") or name not in ("cpu", "memory", "ephemeral-storage") \
            and not name.startswith("hugepages-"):
        raise DownwardAPIError(f"unsupported container resource : {resource}")
    resources = Container(container).resources
    amount = (resources.limits if kind == "limits" else resources.requests).get(name)
    if amount is None and kind == "limits":
        amount = node.allocatable.get(name)
    if amount is None and kind == "requests":
        # An unset request defaults to the limit (API defaulting), else reads as zero.
        amount = resources.limits.get(name, 0)
    quantity = Quantity(str(amount) if amount is not None else "0")
    divisor = Quantity(str(selector.get("divisor") or "1"))
    if divisor.as_fraction() == 0:
        divisor = Quantity("1")
    if name == "cpu":
        return str(math.ceil(Fraction(quantity.milli_value(), divisor.milli_value())))
    return str(math.ceil(Fraction(quantity.value(), divisor.value())))
