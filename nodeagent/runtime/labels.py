"""How a pod's Docker containers are named and labelled, so Docker alone says what each one is.

Upstream: the dockershim's naming.go (`k8s_{container}_{pod}_{namespace}_{uid}_{attempt}`, sandboxes use
the container name `POD`, `_` is the delimiter) and labels (`io.kubernetes.pod.{name,namespace,uid}`,
`io.kubernetes.container.name`, `io.kubernetes.docker.type` = podsandbox|container,
`io.kubernetes.sandbox.id`), plus kuberuntime's labels.go, whose annotations the dockershim stored as
labels too (`io.kubernetes.container.{hash,restartCount,terminationMessagePath,terminationMessagePolicy,
preStopHandler}`, `io.kubernetes.pod.terminationGracePeriod`). A restarted kubelet rebuilds every
PodStatus from these, from Docker alone; the preStop handler is kept so a container whose pod is gone can
still be stopped the way its spec asked.

Who sets what, as upstream: the kubelet's sync layer decides a sandbox's and a container's labels (the pod
and container identity, `sandbox_labels` / `container_labels`) and annotations (hash, restart count,
grace period, termination message, preStop handler: `sandbox_annotations` / `container_annotations`) and
passes them in the CRI configs; the runtime adds what only it knows (`runtime_labels`: the container
type, the sandbox id, the node) and stores the annotations as Docker labels too (`docker_labels`), as the
dockershim did (without its `annotation.` key prefix, so containers made before read back the same).

slimkube adds `io.kubernetes.sandbox.attempt` (upstream keeps a sandbox's attempt in CRI metadata and
the name only) and `slimkube.io/node=<node name>`: a kubelet lists, adopts and garbage-collects only
containers carrying its own node name, never another kubelet's on a shared dockerd nor anything a user
ran by hand. Extra labels (tests pass `slimkube.test`) are merged in but never override these.

Identity is read from the labels; the name is only a fallback for containers with missing labels and is
parsed the same way upstream's parseContainerName does (a random suffix after the attempt, which the
dockershim added on a name conflict, is tolerated).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from control.api.typed.core import Container, Pod
from nodeagent.runtime.cri import PodSandboxMetadata

PREFIX = "k8s"
SANDBOX_CONTAINER_NAME = "POD"
DELIMITER = "_"

POD_NAME = "io.kubernetes.pod.name"
POD_NAMESPACE = "io.kubernetes.pod.namespace"
POD_UID = "io.kubernetes.pod.uid"
CONTAINER_NAME = "io.kubernetes.container.name"
CONTAINER_TYPE = "io.kubernetes.docker.type"
SANDBOX_ID = "io.kubernetes.sandbox.id"
CONTAINER_HASH = "io.kubernetes.container.hash"
RESTART_COUNT = "io.kubernetes.container.restartCount"
SANDBOX_ATTEMPT = "io.kubernetes.sandbox.attempt"
GRACE_PERIOD = "io.kubernetes.pod.terminationGracePeriod"
TERMINATION_MESSAGE_PATH = "io.kubernetes.container.terminationMessagePath"
TERMINATION_MESSAGE_POLICY = "io.kubernetes.container.terminationMessagePolicy"
PRESTOP_HANDLER = "io.kubernetes.container.preStopHandler"
NODE = "slimkube.io/node"

DEFAULT_TERMINATION_MESSAGE_PATH = "/dev/termination-log"
DEFAULT_GRACE_PERIOD = 30


class Kind(str, Enum):
    """`io.kubernetes.docker.type`: the pause container that holds a pod's namespaces, or an app/init one."""

    SANDBOX = "podsandbox"
    CONTAINER = "container"


@dataclass(frozen=True)
class Identity:
    """What one Docker container is to the kubelet, read back from its labels (and name)."""

    kind: Kind
    pod_uid: str
    pod_name: str
    namespace: str
    container_name: str  # SANDBOX_CONTAINER_NAME for sandboxes
    attempt: int  # restartCount for containers, the sandbox attempt for sandboxes
    sandbox_id: str = ""
    hash: str = ""
    grace_period: int = DEFAULT_GRACE_PERIOD
    termination_message_path: str = DEFAULT_TERMINATION_MESSAGE_PATH
    termination_message_policy: str = "File"
    prestop: Mapping[str, Any] | None = None
    node: str = ""


def sandbox_metadata(pod: Mapping[str, Any], attempt: int) -> PodSandboxMetadata:
    """The CRI metadata of the pod's sandbox: name, uid and namespace ("default" when unset)."""
    meta = Pod(pod).metadata
    return PodSandboxMetadata(name=meta.name, uid=meta.uid, namespace=meta.namespace or "default", attempt=attempt)


def make_name(container: str, sandbox: PodSandboxMetadata, attempt: int) -> str:
    """`k8s_{container}_{pod}_{namespace}_{uid}_{attempt}`; Docker accepts every character these hold
    (DNS-1123 names, uids) and `_` cannot occur in any of them, so the name splits back unambiguously."""
    return DELIMITER.join((PREFIX, container, sandbox.name, sandbox.namespace, sandbox.uid, str(attempt)))


def sandbox_name(sandbox: PodSandboxMetadata) -> str:
    return make_name(SANDBOX_CONTAINER_NAME, sandbox, sandbox.attempt)


def grace_period(pod: Mapping[str, Any]) -> int:
    """The pod's terminationGracePeriodSeconds, upstream's default 30 when unset."""
    value = Pod(pod).spec.termination_grace_period_seconds
    return DEFAULT_GRACE_PERIOD if value is None else int(value)


def sandbox_labels(sandbox: PodSandboxMetadata, *, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The pod's identity (upstream newPodLabels' kubelet labels); `extra` never overrides it."""
    labels = dict(extra or {})
    labels.update({POD_NAME: sandbox.name, POD_NAMESPACE: sandbox.namespace, POD_UID: sandbox.uid})
    return labels


def sandbox_annotations(pod: Mapping[str, Any], attempt: int) -> dict[str, str]:
    return {SANDBOX_ATTEMPT: str(attempt), GRACE_PERIOD: str(grace_period(pod))}


def container_labels(sandbox: PodSandboxMetadata, container_name: str, *,
                     extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The pod's and the container's identity (upstream newContainerLabels)."""
    labels = sandbox_labels(sandbox, extra=extra)
    labels[CONTAINER_NAME] = container_name
    return labels


def container_annotations(pod: Mapping[str, Any], container: Mapping[str, Any], *, attempt: int,
                          spec_hash: str) -> dict[str, str]:
    """What a restarted kubelet needs to read back (upstream newContainerAnnotations)."""
    spec = Container(container)
    annotations = {
        CONTAINER_HASH: spec_hash,
        RESTART_COUNT: str(attempt),
        GRACE_PERIOD: str(grace_period(pod)),
        TERMINATION_MESSAGE_PATH: spec.termination_message_path or DEFAULT_TERMINATION_MESSAGE_PATH,
        TERMINATION_MESSAGE_POLICY: spec.termination_message_policy or "File",
    }
    prestop = spec.lifecycle.pre_stop if spec.lifecycle is not None else None
    if prestop is not None and prestop.raw:
        annotations[PRESTOP_HANDLER] = json.dumps(prestop.raw, sort_keys=True, separators=(",", ":"))
    return annotations


def runtime_labels(kind: Kind, *, node: str, sandbox_id: str = "") -> dict[str, str]:
    """What the runtime itself adds: the container type, the node, and an app container's sandbox."""
    labels = {CONTAINER_TYPE: kind.value, NODE: node}
    if kind is Kind.CONTAINER:
        labels[SANDBOX_ID] = sandbox_id
    return labels


def docker_labels(labels: Mapping[str, str], annotations: Mapping[str, str],
                  runtime: Mapping[str, str]) -> dict[str, str]:
    """One Docker label set: the annotations, the kubelet's labels over them, the runtime's over both."""
    return {**annotations, **labels, **runtime}


@dataclass(frozen=True)
class ParsedName:
    container_name: str
    pod_name: str
    namespace: str
    pod_uid: str
    attempt: int


def parse_name(name: str) -> ParsedName | None:
    """Split a name made by `make_name` (Docker lists names with a leading `/`); None if it is not ours."""
    parts = name.lstrip("/").split(DELIMITER)
    if len(parts) not in (6, 7) or parts[0] != PREFIX:  # 7: a random suffix added on a name conflict
        return None
    try:
        attempt = int(parts[5])
    except ValueError:
        return None
    return ParsedName(parts[1], parts[2], parts[3], parts[4], attempt)


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value not in (None, "") else default
    except ValueError:
        return default


def parse_labels(labels: Mapping[str, str], name: str = "") -> Identity | None:
    """The identity of a container from its labels, the name filling gaps; None for a container that is
    not a pod's (no uid, or an unknown type), which the kubelet then leaves alone."""
    parsed = parse_name(name) if name else None
    uid = labels.get(POD_UID) or (parsed.pod_uid if parsed else "")
    try:
        kind = Kind(labels.get(CONTAINER_TYPE, ""))
    except ValueError:
        if parsed is None:
            return None
        kind = Kind.SANDBOX if parsed.container_name == SANDBOX_CONTAINER_NAME else Kind.CONTAINER
    if not uid:
        return None
    fallback_attempt = parsed.attempt if parsed else 0
    if kind is Kind.SANDBOX:
        container_name = SANDBOX_CONTAINER_NAME
        attempt = _int(labels.get(SANDBOX_ATTEMPT), fallback_attempt)
    else:
        container_name = labels.get(CONTAINER_NAME) or (parsed.container_name if parsed else "")
        attempt = _int(labels.get(RESTART_COUNT), fallback_attempt)
    prestop = labels.get(PRESTOP_HANDLER)
    try:
        prestop_handler = json.loads(prestop) if prestop else None
    except ValueError:
        prestop_handler = None
    return Identity(
        kind=kind,
        pod_uid=uid,
        pod_name=labels.get(POD_NAME) or (parsed.pod_name if parsed else ""),
        namespace=labels.get(POD_NAMESPACE) or (parsed.namespace if parsed else ""),
        container_name=container_name,
        attempt=attempt,
        sandbox_id=labels.get(SANDBOX_ID, ""),
        hash=labels.get(CONTAINER_HASH, ""),
        grace_period=_int(labels.get(GRACE_PERIOD), DEFAULT_GRACE_PERIOD),
        termination_message_path=labels.get(TERMINATION_MESSAGE_PATH) or DEFAULT_TERMINATION_MESSAGE_PATH,
        termination_message_policy=labels.get(TERMINATION_MESSAGE_POLICY) or "File",
        prestop=prestop_handler,
        node=labels.get(NODE, ""),
    )


def parse_entry(entry: Mapping[str, Any]) -> Identity | None:
    """Identity from one item of the low-level `APIClient.containers()` list (keys `Labels`, `Names`) or
    of `inspect_container` (keys `Config.Labels`, `Name`)."""
    if "Config" in entry:
        return parse_labels(entry["Config"].get("Labels") or {}, entry.get("Name", ""))
    names = entry.get("Names") or [""]
    return parse_labels(entry.get("Labels") or {}, names[0])
