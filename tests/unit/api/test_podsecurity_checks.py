"""The Pod Security checks: for each field, the values each level allows and refuses, per version, with
upstream's reasons and details (k8s.io/pod-security-admission/policy/check_*_test.go and the Pod Security
Standards' table)."""

from __future__ import annotations

from typing import Any

import pytest

from control.api.podsecurity.policy import (
    LATEST,
    Evaluator,
    LevelVersion,
    Version,
    forbidden_detail,
    forbidden_reasons,
)

EVALUATOR = Evaluator()  # every version upstream has checks for
RESTRICTED_OK_CONTEXT = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
                         "runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}


def pod(*, container: dict[str, Any] | None = None, restricted_base: bool = False, **spec: Any) -> dict[str, Any]:
    """A pod spec with one container `c`; `restricted_base` starts from a container `restricted` allows."""
    context = dict(RESTRICTED_OK_CONTEXT) if restricted_base else {}
    body = {"name": "c", "image": "busybox", "securityContext": context}
    for key, value in (container or {}).items():
        if key == "securityContext":
            context.update(value)
        else:
            body[key] = value
    return {"containers": [body], **spec}


def evaluate(level: str, spec: dict[str, Any], *, version: Version = LATEST,
             metadata: dict[str, Any] | None = None) -> str:
    return forbidden_detail(EVALUATOR.evaluate(LevelVersion(level, version), metadata or {}, spec))


# (id, level, spec, metadata, version, expected detail ("" = allowed))
BASELINE_CASES = [
    ("empty pod", pod(), None, LATEST, ""),
    ("hostNetwork", pod(hostNetwork=True), None, LATEST, "host namespaces (hostNetwork=true)"),
    ("host namespaces all", pod(hostNetwork=True, hostPID=True, hostIPC=True), None, LATEST,
     "host namespaces (hostNetwork=true, hostPID=true, hostIPC=true)"),
    ("hostNetwork false", pod(hostNetwork=False), None, LATEST, ""),
    ("privileged", pod(container={"securityContext": {"privileged": True}}), None, LATEST,
     'privileged (container "c" must not set securityContext.privileged=true)'),
    ("privileged false", pod(container={"securityContext": {"privileged": False}}), None, LATEST, ""),
    ("capabilities default set", pod(container={"securityContext": {"capabilities": {"add": ["CHOWN", "KILL"]}}}),
     None, LATEST, ""),
    ("capabilities beyond", pod(container={"securityContext": {"capabilities": {"add": ["NET_ADMIN", "SYS_ADMIN"]}}}),
     None, LATEST, 'non-default capabilities (container "c" must not include "NET_ADMIN", "SYS_ADMIN" in '
     'securityContext.capabilities.add)'),
    ("hostPath", pod(volumes=[{"name": "root", "hostPath": {"path": "/"}}]), None, LATEST,
     'hostPath volumes (volume "root")'),
    ("emptyDir", pod(volumes=[{"name": "v", "emptyDir": {}}]), None, LATEST, ""),
    ("hostPort", pod(container={"ports": [{"containerPort": 80, "hostPort": 8080}]}), None, LATEST,
     'hostPort (container "c" uses hostPort 8080)'),
    ("hostPort 0", pod(container={"ports": [{"containerPort": 80, "hostPort": 0}]}), None, LATEST, ""),
    ("apparmor unconfined", pod(container={"securityContext": {"appArmorProfile": {"type": "Unconfined"}}}), None,
     LATEST, 'forbidden AppArmor profile (container "c" must not set AppArmor profile type to "Unconfined")'),
    ("apparmor localhost", pod(securityContext={"appArmorProfile": {"type": "Localhost"}}), None, LATEST, ""),
    ("apparmor annotation", pod(), {"annotations": {"container.apparmor.security.beta.kubernetes.io/c": "unconfined"}},
     LATEST, 'forbidden AppArmor profile (annotation must not set AppArmor profile type to '
     '"container.apparmor.security.beta.kubernetes.io/c="unconfined"")'),
    ("apparmor annotation runtime/default", pod(),
     {"annotations": {"container.apparmor.security.beta.kubernetes.io/c": "runtime/default"}}, LATEST, ""),
    ("selinux type", pod(securityContext={"seLinuxOptions": {"type": "spc_t"}}), None, LATEST,
     'seLinuxOptions (pod set forbidden securityContext.seLinuxOptions: type "spc_t")'),
    ("selinux user and role", pod(container={"securityContext": {"seLinuxOptions": {"user": "u", "role": "r"}}}),
     None, LATEST, 'seLinuxOptions (container "c" set forbidden securityContext.seLinuxOptions: '
     'user may not be set; role may not be set)'),
    ("selinux container_t", pod(securityContext={"seLinuxOptions": {"type": "container_t"}}), None, LATEST, ""),
    ("selinux container_engine_t at 1.31", pod(securityContext={"seLinuxOptions": {"type": "container_engine_t"}}),
     None, Version(31), ""),
    ("selinux container_engine_t at 1.30", pod(securityContext={"seLinuxOptions": {"type": "container_engine_t"}}),
     None, Version(30),
     'seLinuxOptions (pod set forbidden securityContext.seLinuxOptions: type "container_engine_t")'),
    ("procMount unmasked", pod(container={"securityContext": {"procMount": "Unmasked"}}), None, LATEST,
     'procMount (container "c" must not set securityContext.procMount to "Unmasked")'),
    ("procMount unmasked in a user namespace at 1.35", pod(container={"securityContext": {"procMount": "Unmasked"}},
                                                         hostUsers=False), None, Version(35), ""),
    ("procMount unmasked in a user namespace at 1.34", pod(container={"securityContext": {"procMount": "Unmasked"}},
                                                         hostUsers=False), None, Version(34),
     'procMount (container "c" must not set securityContext.procMount to "Unmasked")'),
    ("seccomp unconfined", pod(securityContext={"seccompProfile": {"type": "Unconfined"}}), None, LATEST,
     'seccompProfile (pod must not set securityContext.seccompProfile.type to "Unconfined")'),
    ("seccomp unset", pod(), None, LATEST, ""),
    ("seccomp annotation before 1.19", pod(), {"annotations": {"seccomp.security.alpha.kubernetes.io/pod":
                                                               "unconfined"}}, Version(18),
     'seccompProfile (forbidden annotation seccomp.security.alpha.kubernetes.io/pod="unconfined")'),
    ("seccomp annotation from 1.19 not read", pod(), {"annotations": {"seccomp.security.alpha.kubernetes.io/pod":
                                                                      "unconfined"}}, Version(19), ""),
    ("sysctl safe", pod(securityContext={"sysctls": [{"name": "net.ipv4.tcp_syncookies", "value": "1"}]}), None,
     LATEST, ""),
    ("sysctl unsafe", pod(securityContext={"sysctls": [{"name": "kernel.msgmax", "value": "1"}]}), None, LATEST,
     "forbidden sysctls (kernel.msgmax)"),
    ("sysctl reserved ports at 1.27", pod(securityContext={"sysctls": [{"name": "net.ipv4.ip_local_reserved_ports",
                                                                        "value": "1"}]}), None, Version(27), ""),
    ("sysctl reserved ports at 1.26", pod(securityContext={"sysctls": [{"name": "net.ipv4.ip_local_reserved_ports",
                                                                        "value": "1"}]}), None, Version(26),
     "forbidden sysctls (net.ipv4.ip_local_reserved_ports)"),
    ("sysctl keepalive at 1.29", pod(securityContext={"sysctls": [{"name": "net.ipv4.tcp_keepalive_time",
                                                                   "value": "1"}]}), None, Version(29), ""),
    ("sysctl keepalive at 1.28", pod(securityContext={"sysctls": [{"name": "net.ipv4.tcp_keepalive_time",
                                                                   "value": "1"}]}), None, Version(28),
     "forbidden sysctls (net.ipv4.tcp_keepalive_time)"),
    ("sysctl tcp_rmem at 1.32", pod(securityContext={"sysctls": [{"name": "net.ipv4.tcp_rmem", "value": "1"}]}),
     None, Version(32), ""),
    ("sysctl tcp_rmem at 1.31", pod(securityContext={"sysctls": [{"name": "net.ipv4.tcp_rmem", "value": "1"}]}),
     None, Version(31), "forbidden sysctls (net.ipv4.tcp_rmem)"),
    ("windows hostProcess", pod(securityContext={"windowsOptions": {"hostProcess": True}}), None, LATEST,
     "hostProcess (pod must not set securityContext.windowsOptions.hostProcess=true)"),
    ("probe host at 1.34", pod(container={"livenessProbe": {"httpGet": {"host": "10.0.0.1", "port": 80}}}), None,
     Version(34), 'probe or lifecycle host (container "c" uses probe or lifecycle host "10.0.0.1")'),
    ("probe host at 1.33", pod(container={"livenessProbe": {"httpGet": {"host": "10.0.0.1", "port": 80}}}), None,
     Version(33), ""),
]


@pytest.mark.parametrize(("spec", "metadata", "version", "expected"),
                         [pytest.param(*case[1:], id=case[0]) for case in BASELINE_CASES])
def test_baseline(spec: dict[str, Any], metadata: dict[str, Any] | None, version: Version, expected: str) -> None:
    assert evaluate("baseline", spec, version=version, metadata=metadata) == expected
    assert evaluate("privileged", spec, version=version, metadata=metadata) == ""


RESTRICTED_CASES = [
    ("restricted pod", pod(restricted_base=True), LATEST, ""),
    ("volume configMap", pod(restricted_base=True, volumes=[{"name": "v", "configMap": {"name": "x"}}]), LATEST, ""),
    ("volume nfs", pod(restricted_base=True, volumes=[{"name": "v", "nfs": {"server": "s", "path": "/"}}]), LATEST,
     'restricted volume types (volume "v" uses restricted volume type "nfs")'),
    ("volume hostPath replaces the baseline check", pod(restricted_base=True,
                                                        volumes=[{"name": "v", "hostPath": {"path": "/"}}]), LATEST,
     'restricted volume types (volume "v" uses restricted volume type "hostPath")'),
    ("allowPrivilegeEscalation unset", pod(restricted_base=True,
                                           container={"securityContext": {"allowPrivilegeEscalation": None}}),
     LATEST, 'allowPrivilegeEscalation != false (container "c" must set '
     'securityContext.allowPrivilegeEscalation=false)'),
    ("allowPrivilegeEscalation true on windows from 1.25",
     pod(restricted_base=True, container={"securityContext": {"allowPrivilegeEscalation": True}},
         os={"name": "windows"}), Version(25), ""),
    ("allowPrivilegeEscalation true on windows at 1.24",
     pod(restricted_base=True, container={"securityContext": {"allowPrivilegeEscalation": True}},
         os={"name": "windows"}), Version(24),
     'allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false)'),
    ("capabilities add NET_BIND_SERVICE", pod(restricted_base=True, container={"securityContext": {
        "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}}}), LATEST, ""),
    ("capabilities add CHOWN", pod(restricted_base=True, container={"securityContext": {
        "capabilities": {"drop": ["ALL"], "add": ["CHOWN"]}}}), LATEST,
     'unrestricted capabilities (container "c" must not include "CHOWN" in securityContext.capabilities.add)'),
    ("capabilities no drop", pod(restricted_base=True, container={"securityContext": {"capabilities": {}}}),
     LATEST, 'unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"])'),
    ("capabilities before 1.22: baseline's check", pod(restricted_base=True, container={"securityContext": {
        "capabilities": {"drop": ["ALL"], "add": ["CHOWN"]}}}), Version(21), ""),
    ("runAsNonRoot false", pod(restricted_base=True, container={"securityContext": {"runAsNonRoot": False}}),
     LATEST, 'runAsNonRoot != true (container "c" must not set securityContext.runAsNonRoot=false)'),
    ("runAsNonRoot at pod level", pod(restricted_base=True, container={"securityContext": {"runAsNonRoot": None}},
                                      securityContext={"runAsNonRoot": True}), LATEST, ""),
    ("runAsNonRoot unset", pod(restricted_base=True, container={"securityContext": {"runAsNonRoot": None}}),
     LATEST, 'runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true)'),
    ("runAsNonRoot false in a user namespace at 1.35", pod(
        restricted_base=True, container={"securityContext": {"runAsNonRoot": False}}, hostUsers=False),
     Version(35), ""),
    ("runAsUser 0", pod(restricted_base=True, securityContext={"runAsUser": 0}), LATEST,
     "runAsUser=0 (pod must not set runAsUser=0)"),
    ("runAsUser 1000", pod(restricted_base=True, securityContext={"runAsUser": 1000}), LATEST, ""),
    ("runAsUser 0 before 1.23", pod(restricted_base=True, securityContext={"runAsUser": 0}), Version(22), ""),
    ("seccomp unset", pod(restricted_base=True, container={"securityContext": {"seccompProfile": None}}), LATEST,
     'seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to '
     '"RuntimeDefault" or "Localhost")'),
    ("seccomp at pod level", pod(restricted_base=True, container={"securityContext": {"seccompProfile": None}},
                                 securityContext={"seccompProfile": {"type": "Localhost"}}), LATEST, ""),
    ("seccomp unset on windows from 1.25", pod(restricted_base=True, os={"name": "windows"},
                                               container={"securityContext": {"seccompProfile": None}}),
     Version(25), ""),
    ("procMount restricted ignores user namespaces at 1.35", pod(
        restricted_base=True, container={"securityContext": {"procMount": "Unmasked"}}, hostUsers=False),
     Version(35), 'procMount (container "c" must not set securityContext.procMount to "Unmasked")'),
    ("privileged and more, in upstream's order", pod(container={"securityContext": {"privileged": True}}), LATEST,
     'privileged (container "c" must not set securityContext.privileged=true), allowPrivilegeEscalation != false '
     '(container "c" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities '
     '(container "c" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container '
     '"c" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container "c" must set '
     'securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")'),
]


def _without_nones(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _without_nones(v) for k, v in obj.items() if v is not None}
    if isinstance(obj, list):
        return [_without_nones(v) for v in obj]
    return obj


@pytest.mark.parametrize(("spec", "version", "expected"),
                         [pytest.param(*case[1:], id=case[0]) for case in RESTRICTED_CASES])
def test_restricted(spec: dict[str, Any], version: Version, expected: str) -> None:
    assert evaluate("restricted", _without_nones(spec), version=version) == expected


def test_every_container_kind_is_visited_in_upstreams_order() -> None:
    spec = {"initContainers": [{"name": "i", "securityContext": {"privileged": True}}],
            "containers": [{"name": "c", "securityContext": {"privileged": True}}],
            "ephemeralContainers": [{"name": "e", "securityContext": {"privileged": True}}]}
    assert evaluate("baseline", spec) == \
        'privileged (containers "i", "c", "e" must not set securityContext.privileged=true)'


def test_latest_and_newer_versions_are_the_servers_own() -> None:
    """An evaluator capped at 1.30 (the server's version) does not apply 1.31's SELinux types or 1.34's probe
    check, whatever the label says."""
    capped = Evaluator(max_version=Version(30))
    spec = pod(securityContext={"seLinuxOptions": {"type": "container_engine_t"}},
               container={"livenessProbe": {"tcpSocket": {"host": "h", "port": 1}}})
    for version in (LATEST, Version(31), Version(40)):
        assert forbidden_reasons(capped.evaluate(LevelVersion("baseline", version), {}, spec)) == "seLinuxOptions"
    assert forbidden_reasons(EVALUATOR.evaluate(LevelVersion("baseline"), {}, spec)) == "probe or lifecycle host"
