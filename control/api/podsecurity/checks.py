"""The Pod Security Standards' checks, one function per check and version (upstream:
k8s.io/pod-security-admission/policy/check_*.go; the check IDs, levels, versions, overrides, reasons and
details are upstream's, word for word, so a refusal reads as a kube-apiserver's).

A check reads a pod's metadata and spec (wire dicts, or a workload's pod template) and returns None when
the pod passes, else a `Violation` (upstream's CheckResult with Allowed=false). Containers are visited as
upstream's visitContainers does: init containers, containers, then ephemeral containers.

`CHECKS` is the table: per check its level, and per version since which one the function applies and
which baseline checks a restricted one replaces. policy.py turns it into one list of functions per level
and version.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Obj = Mapping[str, Any]
BASELINE = "baseline"
RESTRICTED = "restricted"


@dataclass(frozen=True, slots=True)
class Violation:
    reason: str
    detail: str


CheckFn = Callable[[Obj, Obj], Violation | None]


@dataclass(frozen=True, slots=True)
class VersionedCheck:
    minimum: tuple[int, int]
    check: CheckFn
    overrides: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Check:
    id: str
    level: str
    versions: tuple[VersionedCheck, ...] = field(default=())


# -- helpers (upstream helpers.go, visitor.go) ----------------------------------------------------


def _containers(spec: Obj) -> Iterator[Obj]:
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for container in spec.get(key) or ():
            if isinstance(container, Mapping):
                yield container


def _context(obj: Obj) -> Obj:
    context = obj.get("securityContext")
    return context if isinstance(context, Mapping) else {}


def _sub(obj: Obj, key: str) -> Obj | None:
    value = obj.get(key)
    return value if isinstance(value, Mapping) else None


def join_quote(items: Sequence[str]) -> str:
    return '"' + '", "'.join(items) + '"' if items else ""


def pluralize(singular: str, plural: str, count: int) -> str:
    return singular if count == 1 else plural


def _containers_phrase(names: Sequence[str]) -> str:
    return f"{pluralize('container', 'containers', len(names))} {join_quote(names)}"


def _windows(spec: Obj) -> bool:
    os_ = _sub(spec, "os")
    return os_ is not None and os_.get("name") == "windows"


def _user_namespace(spec: Obj) -> bool:
    """relaxPolicyForUserNamespacePod: `hostUsers: false`."""
    return spec.get("hostUsers") is False


def _skip_windows(check: CheckFn) -> CheckFn:
    def wrapped(metadata: Obj, spec: Obj) -> Violation | None:
        return None if _windows(spec) else check(metadata, spec)
    return wrapped


def _skip_user_namespace(check: CheckFn) -> CheckFn:
    def wrapped(metadata: Obj, spec: Obj) -> Violation | None:
        return None if _user_namespace(spec) else check(metadata, spec)
    return wrapped


# -- baseline --------------------------------------------------------------------------------------


def host_namespaces(metadata: Obj, spec: Obj) -> Violation | None:
    used = [f"{key}=true" for key in ("hostNetwork", "hostPID", "hostIPC") if spec.get(key) is True]
    return Violation("host namespaces", ", ".join(used)) if used else None


def privileged(metadata: Obj, spec: Obj) -> Violation | None:
    bad = [c.get("name", "") for c in _containers(spec) if _context(c).get("privileged") is True]
    return Violation("privileged", f"{_containers_phrase(bad)} must not set securityContext.privileged=true") \
        if bad else None


CAPABILITIES_ALLOWED_1_0 = frozenset({
    "AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE", "SETFCAP",
    "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"})


def capabilities_baseline(metadata: Obj, spec: Obj) -> Violation | None:
    bad, added = [], set()
    for container in _containers(spec):
        capabilities = _sub(_context(container), "capabilities") or {}
        extra = [str(c) for c in capabilities.get("add") or () if c not in CAPABILITIES_ALLOWED_1_0]
        if extra:
            bad.append(container.get("name", ""))
            added.update(extra)
    if not bad:
        return None
    return Violation("non-default capabilities", f"{_containers_phrase(bad)} must not include "
                     f"{join_quote(sorted(added))} in securityContext.capabilities.add")


def host_path_volumes(metadata: Obj, spec: Obj) -> Violation | None:
    bad = [v.get("name", "") for v in spec.get("volumes") or () if isinstance(v, Mapping) and
           v.get("hostPath") is not None]
    return Violation("hostPath volumes", f"{pluralize('volume', 'volumes', len(bad))} {join_quote(bad)}") \
        if bad else None


def host_ports(metadata: Obj, spec: Obj) -> Violation | None:
    bad: list[str] = []
    ports: set[str] = set()
    for container in _containers(spec):
        used = [p.get("hostPort") for p in container.get("ports") or () if isinstance(p, Mapping) and p.get("hostPort")]
        if used:
            bad.append(container.get("name", ""))
            ports.update(str(p) for p in used)
    if not bad:
        return None
    return Violation("hostPort", f"{_containers_phrase(bad)} {pluralize('uses', 'use', len(bad))} "
                     f"{pluralize('hostPort', 'hostPorts', len(ports))} {', '.join(sorted(ports))}")


APPARMOR_ANNOTATION_PREFIX = "container.apparmor.security.beta.kubernetes.io/"


def app_armor_profile(metadata: Obj, spec: Obj) -> Violation | None:
    setters: list[str] = []
    values: set[str] = set()
    pod_profile = _sub(_context(spec), "appArmorProfile")
    if pod_profile is not None and pod_profile.get("type") not in ("RuntimeDefault", "Localhost"):
        setters.append("pod")
        values.add(str(pod_profile.get("type") or ""))
    bad = []
    for container in _containers(spec):
        profile = _sub(_context(container), "appArmorProfile")
        if profile is not None and profile.get("type") not in ("RuntimeDefault", "Localhost"):
            bad.append(container.get("name", ""))
            values.add(str(profile.get("type") or ""))
    if bad:
        setters.append(_containers_phrase(bad))
    annotations = metadata.get("annotations") or {}
    forbidden = sorted(f'{k}="{v}"' for k, v in annotations.items() if k.startswith(APPARMOR_ANNOTATION_PREFIX)
                       and not (not v or v == "runtime/default" or str(v).startswith("localhost/")))
    listed = sorted(values) + forbidden
    if forbidden:
        setters.append(pluralize("annotation", "annotations", len(forbidden)))
    if not setters:
        return None
    return Violation(pluralize("forbidden AppArmor profile", "forbidden AppArmor profiles", len(listed)),
                     f"{' and '.join(setters)} must not set AppArmor profile type to {join_quote(listed)}")


SELINUX_TYPES_1_0 = frozenset({"", "container_t", "container_init_t", "container_kvm_t"})
SELINUX_TYPES_1_31 = SELINUX_TYPES_1_0 | {"container_engine_t"}


def _se_linux_options(allowed: frozenset[str]) -> CheckFn:
    def check(metadata: Obj, spec: Obj) -> Violation | None:
        bad_types: set[str] = set()
        set_user = set_role = False

        def valid(options: Obj) -> bool:
            nonlocal set_user, set_role
            ok = True
            if (options.get("type") or "") not in allowed:
                ok = False
                bad_types.add(str(options.get("type")))
            if options.get("user"):
                set_user = True
                ok = False
            if options.get("role"):
                set_role = True
                ok = False
            return ok

        setters = []
        pod_options = _sub(_context(spec), "seLinuxOptions")
        if pod_options is not None and not valid(pod_options):
            setters.append("pod")
        bad = [c.get("name", "") for c in _containers(spec)
               if (options := _sub(_context(c), "seLinuxOptions")) is not None and not valid(options)]
        if bad:
            setters.append(_containers_phrase(bad))
        if not setters:
            return None
        data = []
        if bad_types:
            data.append(f"{pluralize('type', 'types', len(bad_types))} {join_quote(sorted(bad_types))}")
        if set_user:
            data.append("user may not be set")
        if set_role:
            data.append("role may not be set")
        return Violation("seLinuxOptions", f"{' and '.join(setters)} set forbidden securityContext.seLinuxOptions: "
                         f"{'; '.join(data)}")
    return check


def proc_mount(metadata: Obj, spec: Obj) -> Violation | None:
    bad, types = [], set()
    for container in _containers(spec):
        value = _context(container).get("procMount")
        if value is not None and value != "Default":
            bad.append(container.get("name", ""))
            types.add(str(value))
    if not bad:
        return None
    return Violation("procMount", f"{_containers_phrase(bad)} must not set securityContext.procMount to "
                     f"{join_quote(sorted(types))}")


SECCOMP_POD_ANNOTATION = "seccomp.security.alpha.kubernetes.io/pod"
SECCOMP_CONTAINER_ANNOTATION_PREFIX = "container.seccomp.security.alpha.kubernetes.io/"


def _valid_seccomp_annotation(value: Any) -> bool:
    return value in ("runtime/default", "docker/default") or str(value).startswith("localhost/")


def seccomp_baseline_1_0(metadata: Obj, spec: Obj) -> Violation | None:
    annotations = metadata.get("annotations") or {}
    keys = [SECCOMP_POD_ANNOTATION] + [SECCOMP_CONTAINER_ANNOTATION_PREFIX + str(c.get("name", ""))
                                       for c in _containers(spec)]
    forbidden = sorted({f'{k}="{annotations[k]}"' for k in keys if k in annotations
                        and not _valid_seccomp_annotation(annotations[k])})
    if not forbidden:
        return None
    return Violation("seccompProfile", f"forbidden {pluralize('annotation', 'annotations', len(forbidden))} "
                     f"{', '.join(forbidden)}")


def _seccomp_type(obj: Obj) -> tuple[bool, str]:
    """(set, type) of an object's securityContext.seccompProfile."""
    profile = _sub(_context(obj), "seccompProfile")
    return (False, "") if profile is None else (True, str(profile.get("type") or ""))


def _seccomp(required: bool) -> CheckFn:
    """seccompProfile_baseline 1.19 (`required` False) and seccompProfile_restricted 1.19 (True)."""
    def check(metadata: Obj, spec: Obj) -> Violation | None:
        setters, values = [], set()
        pod_set, pod_type = _seccomp_type(spec)
        pod_valid = pod_set and pod_type in ("Localhost", "RuntimeDefault")
        if pod_set and not pod_valid:
            setters.append("pod")
            values.add(pod_type)
        explicit, implicit = [], []
        for container in _containers(spec):
            is_set, kind = _seccomp_type(container)
            if is_set and kind not in ("Localhost", "RuntimeDefault"):
                explicit.append(container.get("name", ""))
                values.add(kind)
            elif not is_set and not pod_valid:
                implicit.append(container.get("name", ""))
        if explicit:
            setters.append(_containers_phrase(explicit))
        if setters:
            return Violation("seccompProfile", f"{' and '.join(setters)} must not set "
                             f"securityContext.seccompProfile.type to {join_quote(sorted(values))}")
        if required and implicit:
            return Violation("seccompProfile", f"pod or {_containers_phrase(implicit)} must set "
                             'securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"')
        return None
    return check


SYSCTLS_1_0 = frozenset({"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_syncookies",
                         "net.ipv4.ping_group_range", "net.ipv4.ip_unprivileged_port_start"})
SYSCTLS_1_27 = SYSCTLS_1_0 | {"net.ipv4.ip_local_reserved_ports"}
SYSCTLS_1_29 = SYSCTLS_1_27 | {"net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout",
                               "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes"}
SYSCTLS_1_32 = SYSCTLS_1_29 | {"net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"}
SYSCTLS_1_37 = SYSCTLS_1_32 | {"net.ipv4.tcp_slow_start_after_idle", "net.ipv4.tcp_notsent_lowat"}


def _sysctls(allowed: frozenset[str]) -> CheckFn:
    def check(metadata: Obj, spec: Obj) -> Violation | None:
        bad = [str(s.get("name")) for s in _context(spec).get("sysctls") or ()
               if isinstance(s, Mapping) and s.get("name") not in allowed]
        return Violation("forbidden sysctls", ", ".join(bad)) if bad else None
    return check


def windows_host_process(metadata: Obj, spec: Obj) -> Violation | None:
    def host_process(obj: Obj) -> bool:
        return (_sub(_context(obj), "windowsOptions") or {}).get("hostProcess") is True

    setters = ["pod"] if host_process(spec) else []
    bad = [c.get("name", "") for c in _containers(spec) if host_process(c)]
    if bad:
        setters.append(_containers_phrase(bad))
    if not setters:
        return None
    return Violation("hostProcess", f"{' and '.join(setters)} must not set "
                     "securityContext.windowsOptions.hostProcess=true")


def _handler_hosts(handler: Any) -> list[str]:
    if not isinstance(handler, Mapping):
        return []
    return [str(h) for kind in ("httpGet", "tcpSocket")
            if isinstance(handler.get(kind), Mapping) and (h := handler[kind].get("host"))]


def host_probes_and_lifecycle(metadata: Obj, spec: Obj) -> Violation | None:
    bad: set[str] = set()
    hosts: set[str] = set()
    for container in _containers(spec):
        lifecycle = _sub(container, "lifecycle") or {}
        found = [h for handler in (container.get("livenessProbe"), container.get("readinessProbe"),
                                   container.get("startupProbe"), lifecycle.get("postStart"), lifecycle.get("preStop"))
                 for h in _handler_hosts(handler)]
        if found:
            bad.add(str(container.get("name", "")))
            hosts.update(found)
    if not bad:
        return None
    return Violation("probe or lifecycle host", f"{_containers_phrase(sorted(bad))} "
                     f"{pluralize('uses', 'use', len(bad))} "
                     f"{pluralize('probe or lifecycle host', 'probe or lifecycle hosts', len(hosts))} "
                     f"{join_quote(sorted(hosts))}")


# -- restricted ------------------------------------------------------------------------------------


ALLOWED_VOLUME_SOURCES = frozenset({"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "image",
                                    "persistentVolumeClaim", "projected", "secret"})
# upstream's order of the restricted sources it names; another key is "unknown"
RESTRICTED_VOLUME_SOURCES = ("hostPath", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "nfs", "iscsi",
                             "glusterfs", "rbd", "flexVolume", "cinder", "cephfs", "flocker", "fc", "azureFile",
                             "vsphereVolume", "quobyte", "azureDisk", "photonPersistentDisk", "portworxVolume",
                             "scaleIO", "storageos")


def restricted_volumes(metadata: Obj, spec: Obj) -> Violation | None:
    bad, types = [], set()
    for volume in spec.get("volumes") or ():
        if not isinstance(volume, Mapping):
            continue
        sources = {k for k, v in volume.items() if k != "name" and v is not None}
        if sources & ALLOWED_VOLUME_SOURCES:
            continue
        bad.append(str(volume.get("name", "")))
        types.add(next((s for s in RESTRICTED_VOLUME_SOURCES if s in sources), "unknown"))
    if not bad:
        return None
    return Violation("restricted volume types", f"{pluralize('volume', 'volumes', len(bad))} {join_quote(bad)} "
                     f"{pluralize('uses', 'use', len(bad))} "
                     f"{pluralize('restricted volume type', 'restricted volume types', len(types))} "
                     f"{join_quote(sorted(types))}")


def allow_privilege_escalation(metadata: Obj, spec: Obj) -> Violation | None:
    bad = [c.get("name", "") for c in _containers(spec) if _context(c).get("allowPrivilegeEscalation") is not False]
    if not bad:
        return None
    return Violation("allowPrivilegeEscalation != false",
                     f"{_containers_phrase(bad)} must set securityContext.allowPrivilegeEscalation=false")


def capabilities_restricted(metadata: Obj, spec: Obj) -> Violation | None:
    missing_drop, adding, added = [], [], set()
    for container in _containers(spec):
        capabilities = _sub(_context(container), "capabilities")
        if capabilities is None:
            missing_drop.append(container.get("name", ""))
            continue
        if "ALL" not in (capabilities.get("drop") or ()):
            missing_drop.append(container.get("name", ""))
        extra = [str(c) for c in capabilities.get("add") or () if c != "NET_BIND_SERVICE"]
        if extra:
            adding.append(container.get("name", ""))
            added.update(extra)
    details = []
    if missing_drop:
        details.append(f'{_containers_phrase(missing_drop)} must set securityContext.capabilities.drop=["ALL"]')
    if adding:
        details.append(f"{_containers_phrase(adding)} must not include {join_quote(sorted(added))} in "
                       "securityContext.capabilities.add")
    return Violation("unrestricted capabilities", "; ".join(details)) if details else None


def run_as_non_root(metadata: Obj, spec: Obj) -> Violation | None:
    setters = []
    pod_value = _context(spec).get("runAsNonRoot")
    if pod_value is False:
        setters.append("pod")
    explicit, implicit = [], []
    for container in _containers(spec):
        value = _context(container).get("runAsNonRoot")
        if value is False:
            explicit.append(container.get("name", ""))
        elif value is None and pod_value is not True:
            implicit.append(container.get("name", ""))
    if explicit:
        setters.append(_containers_phrase(explicit))
    if setters:
        return Violation("runAsNonRoot != true",
                         f"{' and '.join(setters)} must not set securityContext.runAsNonRoot=false")
    if implicit:
        return Violation("runAsNonRoot != true",
                         f"pod or {_containers_phrase(implicit)} must set securityContext.runAsNonRoot=true")
    return None


def run_as_user(metadata: Obj, spec: Obj) -> Violation | None:
    def is_root(obj: Obj) -> bool:
        value = _context(obj).get("runAsUser")
        return value == 0 and not isinstance(value, bool)

    setters = ["pod"] if is_root(spec) else []
    bad = [c.get("name", "") for c in _containers(spec) if is_root(c)]
    if bad:
        setters.append(_containers_phrase(bad))
    return Violation("runAsUser=0", f"{' and '.join(setters)} must not set runAsUser=0") if setters else None


CHECKS: tuple[Check, ...] = (
    Check("allowPrivilegeEscalation", RESTRICTED, (
        VersionedCheck((1, 8), allow_privilege_escalation),
        VersionedCheck((1, 25), _skip_windows(allow_privilege_escalation)))),
    Check("appArmorProfile", BASELINE, (VersionedCheck((1, 0), app_armor_profile),)),
    Check("capabilities_baseline", BASELINE, (VersionedCheck((1, 0), capabilities_baseline),)),
    Check("capabilities_restricted", RESTRICTED, (
        VersionedCheck((1, 22), capabilities_restricted, ("capabilities_baseline",)),
        VersionedCheck((1, 25), _skip_windows(capabilities_restricted), ("capabilities_baseline",)))),
    Check("hostNamespaces", BASELINE, (VersionedCheck((1, 0), host_namespaces),)),
    Check("hostPathVolumes", BASELINE, (VersionedCheck((1, 0), host_path_volumes),)),
    Check("hostPorts", BASELINE, (VersionedCheck((1, 0), host_ports),)),
    Check("hostProbesAndHostLifecycle", BASELINE, (VersionedCheck((1, 34), host_probes_and_lifecycle),)),
    Check("privileged", BASELINE, (VersionedCheck((1, 0), privileged),)),
    Check("procMount", BASELINE, (
        VersionedCheck((1, 0), proc_mount),
        VersionedCheck((1, 35), _skip_user_namespace(proc_mount)))),
    Check("procMount_restricted", RESTRICTED, (VersionedCheck((1, 35), proc_mount, ("procMount",)),)),
    Check("restrictedVolumes", RESTRICTED, (VersionedCheck((1, 0), restricted_volumes, ("hostPathVolumes",)),)),
    Check("runAsNonRoot", RESTRICTED, (
        VersionedCheck((1, 0), run_as_non_root),
        VersionedCheck((1, 35), _skip_user_namespace(run_as_non_root)))),
    Check("runAsUser", RESTRICTED, (
        VersionedCheck((1, 23), run_as_user),
        VersionedCheck((1, 35), _skip_user_namespace(run_as_user)))),
    Check("seLinuxOptions", BASELINE, (
        VersionedCheck((1, 0), _se_linux_options(SELINUX_TYPES_1_0)),
        VersionedCheck((1, 31), _se_linux_options(SELINUX_TYPES_1_31)))),
    Check("seccompProfile_baseline", BASELINE, (
        VersionedCheck((1, 0), seccomp_baseline_1_0),
        VersionedCheck((1, 19), _seccomp(required=False)))),
    Check("seccompProfile_restricted", RESTRICTED, (
        VersionedCheck((1, 19), _seccomp(required=True), ("seccompProfile_baseline",)),
        VersionedCheck((1, 25), _skip_windows(_seccomp(required=True)), ("seccompProfile_baseline",)))),
    Check("sysctls", BASELINE, (
        VersionedCheck((1, 0), _sysctls(SYSCTLS_1_0)),
        VersionedCheck((1, 27), _sysctls(SYSCTLS_1_27)),
        VersionedCheck((1, 29), _sysctls(SYSCTLS_1_29)),
        VersionedCheck((1, 32), _sysctls(SYSCTLS_1_32)),
        VersionedCheck((1, 37), _sysctls(SYSCTLS_1_37)))),
    Check("windowsHostProcess", BASELINE, (VersionedCheck((1, 0), windows_host_process),)),
)
