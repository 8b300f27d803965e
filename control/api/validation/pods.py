"""Validation of a pod spec and a pod template, shared by pods, replication controllers and the apps and
batch workload kinds that embed a template.

Upstream: pkg/apis/core/validation/validation.go (ValidatePodSpec, ValidatePodTemplateSpec, validateContainers,
validateContainerPorts, ValidateResourceRequirements, validateVolumeMounts) and the checks a controller's
template must pass, pkg/apis/apps/validation ValidatePodTemplateSpecForReplicaSet and core's
ValidatePodTemplateSpecForRC.

Left out: volume source details, probes, security contexts, affinity, topology spread constraints,
ephemeral containers, resource claims and the rules behind alpha feature gates. Where upstream answers
`Not found` (a volume mount naming no volume), the FieldError vocabulary has no such type, so the error is
`Invalid value` with an explanatory detail.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from control.api.priority import PREEMPTION_POLICIES
from control.api.validation.primitives import NEGATIVE_MESSAGE, PORT_PROTOCOLS, Check, join, validate_object_meta
from control.apimachinery.quantity import Quantity
from control.apimachinery.validation import (
    FieldError,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_env_var_name,
    is_qualified_name,
    is_valid_port_name,
    is_valid_port_num,
    validate_labels,
)

RESTART_POLICIES = ("Always", "OnFailure", "Never")
SELECTOR_MISMATCH_MESSAGE = "`selector` does not match template `labels`"


def _container_ports(c: Check, container: Mapping[str, Any], path: str) -> None:
    names: set[str] = set()
    for port_path, port in c.items(container, "ports", join(path, "ports")):
        name = c.text(port, "name", join(port_path, "name"))
        if name:
            c.invalid(join(port_path, "name"), name, is_valid_port_name(name))
            if name in names:
                c.add([FieldError.duplicate(join(port_path, "name"), name)])
            names.add(name)
        number = c.integer(port, "containerPort", join(port_path, "containerPort"))
        if number == 0 or (number is None and port.get("containerPort") is None):
            c.add([FieldError.required(join(port_path, "containerPort"))])
        elif number is not None:
            c.invalid(join(port_path, "containerPort"), number, is_valid_port_num(number))
        if (host_port := c.integer(port, "hostPort", join(port_path, "hostPort"))):
            c.invalid(join(port_path, "hostPort"), host_port, is_valid_port_num(host_port))
        c.supported(port, "protocol", join(port_path, "protocol"), PORT_PROTOCOLS, required=True)


def _resources(c: Check, container: Mapping[str, Any], path: str) -> None:
    """Quantities parse and are not negative; a request is at most its limit (upstream
    ValidateResourceRequirements)."""
    resources = c.obj(container, "resources", path)
    if resources is None:
        return
    parsed: dict[str, dict[str, Quantity]] = {}
    for kind in ("limits", "requests"):
        parsed[kind] = {}
        amounts = c.obj(resources, kind, join(path, kind)) or {}
        for name, value in amounts.items():
            item_path = f"{join(path, kind)}[{name}]"
            c.invalid(item_path, name, is_qualified_name(name))
            if (quantity := c.quantity(value, item_path)) is None:
                continue
            if quantity < Quantity(0):
                c.add([FieldError.invalid(item_path, value, NEGATIVE_MESSAGE)])
            parsed[kind][name] = quantity
    for name, request in parsed["requests"].items():
        limit = parsed["limits"].get(name)
        if limit is not None and request > limit:
            c.add([FieldError.invalid(f"{join(path, 'requests')}[{name}]", str(request),
                                      f"must be less than or equal to {name} limit of {limit}")])


def _container(c: Check, container: Mapping[str, Any], path: str, *, names: set[str], volumes: set[str]) -> None:
    name = c.text(container, "name", join(path, "name"))
    if name == "":
        c.add([FieldError.required(join(path, "name"))])
    elif name is not None:
        c.invalid(join(path, "name"), name, is_dns1123_label(name))
        if name in names:
            c.add([FieldError.duplicate(join(path, "name"), name)])
        names.add(name)
    image = c.text(container, "image", join(path, "image"))
    if image == "":
        c.add([FieldError.required(join(path, "image"))])
    elif image is not None and image != image.strip():
        c.add([FieldError.invalid(join(path, "image"), image, "must not have leading or trailing whitespace")])
    c.supported(container, "imagePullPolicy", join(path, "imagePullPolicy"), ("Always", "IfNotPresent", "Never"))
    c.supported(container, "terminationMessagePolicy", join(path, "terminationMessagePolicy"),
                ("File", "FallbackToLogsOnError"))
    _container_ports(c, container, path)
    for env_path, env in c.items(container, "env", join(path, "env")):
        env_name = c.text(env, "name", join(env_path, "name"))
        if env_name == "":
            c.add([FieldError.required(join(env_path, "name"))])
        elif env_name is not None:
            c.invalid(join(env_path, "name"), env_name, is_env_var_name(env_name))
        c.text(env, "value", join(env_path, "value"))
    _resources(c, container, join(path, "resources"))
    mount_paths: set[str] = set()
    for mount_path, mount in c.items(container, "volumeMounts", join(path, "volumeMounts")):
        volume = c.text(mount, "name", join(mount_path, "name"))
        if volume == "":
            c.add([FieldError.required(join(mount_path, "name"))])
        elif volume is not None and volume not in volumes:
            c.add([FieldError.invalid(join(mount_path, "name"), volume, "not found in `spec.volumes`")])
        target = c.text(mount, "mountPath", join(mount_path, "mountPath"))
        if target == "":
            c.add([FieldError.required(join(mount_path, "mountPath"))])
        elif target is not None and target in mount_paths:
            c.add([FieldError.invalid(join(mount_path, "mountPath"), target, "must be unique")])
        mount_paths.add(target or "")
        _mount_propagation(c, container, mount, join(mount_path, "mountPropagation"))


def _mount_propagation(c: Check, container: Mapping[str, Any], mount: Mapping[str, Any], path: str) -> None:
    """Upstream validateMountPropagation: one of the three modes, and Bidirectional (mounts made in the
    container appear on the host) only for a privileged container."""
    mode = c.supported(mount, "mountPropagation", path, ("Bidirectional", "HostToContainer", "None"))
    context = container.get("securityContext")
    privileged = isinstance(context, Mapping) and context.get("privileged") is True
    if mode == "Bidirectional" and not privileged:
        c.add([FieldError.forbidden(path, "Bidirectional mount propagation is available only to privileged "
                                          "containers")])


def validate_pod_spec(c: Check, spec: Mapping[str, Any], path: str, *,
                      claim_volumes: frozenset[str] = frozenset()) -> None:
    """Upstream ValidatePodSpec (the subset described in the module docstring). `claim_volumes`: names a
    volumeMount may use besides `spec.volumes` (a StatefulSet's volumeClaimTemplates)."""
    volumes: set[str] = set()
    for volume_path, volume in c.items(spec, "volumes", join(path, "volumes")):
        name = c.text(volume, "name", join(volume_path, "name"))
        if name == "":
            c.add([FieldError.required(join(volume_path, "name"))])
        elif name is not None:
            c.invalid(join(volume_path, "name"), name, is_dns1123_label(name))
            if name in volumes:
                c.add([FieldError.duplicate(join(volume_path, "name"), name)])
            volumes.add(name)
        claim = volume.get("persistentVolumeClaim")
        if isinstance(claim, dict) and not claim.get("claimName"):
            c.add([FieldError.required(join(volume_path, "persistentVolumeClaim.claimName"))])
    mountable = volumes | claim_volumes
    names: set[str] = set()
    containers = c.items(spec, "containers", join(path, "containers"))
    if not containers and not spec.get("containers"):
        c.add([FieldError.required(join(path, "containers"))])
    for container_path, container in containers:
        _container(c, container, container_path, names=names, volumes=mountable)
    for container_path, container in c.items(spec, "initContainers", join(path, "initContainers")):
        _container(c, container, container_path, names=names, volumes=mountable)
    c.supported(spec, "restartPolicy", join(path, "restartPolicy"), RESTART_POLICIES, required=True)
    c.supported(spec, "dnsPolicy", join(path, "dnsPolicy"),
                ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"), required=True)
    c.nonnegative(spec, "terminationGracePeriodSeconds", join(path, "terminationGracePeriodSeconds"))
    deadline_path = join(path, "activeDeadlineSeconds")
    if (deadline := c.integer(spec, "activeDeadlineSeconds", deadline_path)) is not None and deadline <= 0:
        c.add([FieldError.invalid(deadline_path, deadline, "must be between 1 and 2147483647, inclusive")])
    node_selector = join(path, "nodeSelector")
    c.add(validate_labels(c.strings(spec, "nodeSelector", node_selector), path=node_selector))
    c.text(spec, "nodeName", join(path, "nodeName"))
    c.items(spec, "tolerations", join(path, "tolerations"))
    class_path = join(path, "priorityClassName")
    if class_name := c.text(spec, "priorityClassName", class_path):
        c.invalid(class_path, class_name, is_dns1123_subdomain(class_name))
    c.integer(spec, "priority", join(path, "priority"))
    c.supported(spec, "preemptionPolicy", join(path, "preemptionPolicy"), PREEMPTION_POLICIES)


def validate_pod_template(c: Check, template: Mapping[str, Any], path: str, *,
                          claim_volumes: frozenset[str] = frozenset()) -> dict[str, Any] | None:
    """Upstream ValidatePodTemplateSpec; returns the template's spec when it is an object."""
    if (metadata := c.obj(template, "metadata", join(path, "metadata"))) is not None:
        validate_object_meta(c, metadata, join(path, "metadata"), name_validator=None)
    if (spec := c.obj(template, "spec", join(path, "spec"))) is not None:
        validate_pod_spec(c, spec, join(path, "spec"), claim_volumes=claim_volumes)
    return spec


def template_labels(template: Mapping[str, Any]) -> dict[str, str]:
    """The template's string labels, read quietly: validate_pod_template reports the rest."""
    metadata = template.get("metadata")
    labels = metadata.get("labels") if isinstance(metadata, dict) else None
    return {k: v for k, v in labels.items() if isinstance(v, str)} if isinstance(labels, dict) else {}


def validate_controller_template(c: Check, template: Mapping[str, Any], path: str, *, selects: bool, kind: str,
                                   claim_volumes: frozenset[str] = frozenset()) -> None:
    """Upstream ValidatePodTemplateSpecForReplicaSet/ForRC: selected labels, pods that always restart."""
    if not selects:
        c.add([FieldError.invalid(join(path, "metadata.labels"), template_labels(template), SELECTOR_MISMATCH_MESSAGE)])
    if (spec := validate_pod_template(c, template, path, claim_volumes=claim_volumes)) is None:
        return
    policy = spec.get("restartPolicy")
    if isinstance(policy, str) and policy != "Always":
        c.add([FieldError.not_supported(join(path, "spec.restartPolicy"), policy, ["Always"])])
    if spec.get("activeDeadlineSeconds") is not None:
        c.add([FieldError.forbidden(join(path, "spec.activeDeadlineSeconds"),
                                    f"activeDeadlineSeconds in {kind} is not Supported")])
