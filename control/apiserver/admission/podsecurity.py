"""PodSecurity, a validating plugin (upstream: k8s.io/pod-security-admission/admission/admission.go and
the kube-apiserver's plugin/pkg/admission/security/podsecurity/admission.go).

- Pods (create, and updates that change a container image; not status, binding, exec, ... subresources):
  refused with a 403 `violates PodSecurity "<level>:<version>": <reason> (<detail>), ...` when the
  namespace's enforce level refuses them; otherwise a warn-level violation is a `would violate ...`
  warning (control/apiserver/warning.py), an audit-level one an annotation on the attributes, under
  upstream's `pod-security.kubernetes.io/audit-violations` key.
- Workload resources (Deployments, Jobs, ... anything with a pod template): warn and audit only.
- Namespaces: labels that do not parse are a 422 on the namespace; tightening the enforce level returns
  warnings naming the existing pods that would now be refused (at most 3,000 pods, for at most one second).
- Exemptions (usernames, runtimeClassNames, namespaces) and the defaults for a namespace without labels
  come from the PodSecurityConfiguration in the server's admission configuration file (admission/config.py);
  without one, everything is `privileged`, upstream's default. `latest` is the server's own version.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

from control.api.podsecurity import policy
from control.api.podsecurity.checks import Violation
from control.api.podsecurity.policy import Evaluator, LevelVersion, Policy
from control.apimachinery.validation import FieldError
from control.apiserver import status, warning
from control.apiserver.admission.chain import Attributes, Operation, Reader, forbidden
from control.apiserver.authentication.tokens import current_user
from control.apiserver.resources import by_path
from control.util.version import KUBERNETES_MINOR

NAMESPACES = by_path("", "v1", "namespaces")
PODS = by_path("", "v1", "pods")
CONFIG_API_VERSIONS = ("pod-security.admission.config.k8s.io/v1", "pod-security.admission.config.k8s.io/v1beta1")
MAX_PODS_TO_CHECK = 3000  # upstream namespaceMaxPodsToCheck
POD_CHECK_SECONDS = 1.0  # upstream namespacePodCheckTimeout
_GROUPS = ("", "apps", "batch")  # of namespaces, pods and the workload resources
_IGNORED_POD_SUBRESOURCES = frozenset({"exec", "attach", "binding", "eviction", "log", "portforward", "proxy",
                                       "status"})


@dataclass(frozen=True, slots=True)
class Configuration:
    """upstream PodSecurityConfiguration: the defaults and the exemptions."""

    defaults: Policy = Policy()
    usernames: frozenset[str] = field(default_factory=frozenset)
    runtime_classes: frozenset[str] = field(default_factory=frozenset)
    namespaces: frozenset[str] = field(default_factory=frozenset)


def parse_configuration(document: Mapping[str, Any]) -> Configuration:
    """A PodSecurityConfiguration (v1 or v1beta1); ValueError names what is wrong. Versions default to
    `latest`, levels to `privileged`, as upstream's defaults."""
    if document.get("apiVersion") not in CONFIG_API_VERSIONS or document.get("kind") != "PodSecurityConfiguration":
        raise ValueError(f"expected a PodSecurityConfiguration of {' or '.join(CONFIG_API_VERSIONS)}, got "
                         f"{document.get('apiVersion')}/{document.get('kind')}")
    defaults = document.get("defaults") or {}
    modes = {}
    for mode in policy.MODES:
        level = policy.parse_level(str(defaults.get(mode, policy.PRIVILEGED)))
        version = policy.parse_version(str(defaults.get(f"{mode}-version", "latest")))
        if level is None:
            raise ValueError(f"defaults.{mode}: must be one of {', '.join(policy.LEVELS)}")
        if version is None:
            raise ValueError(f'defaults.{mode}-version: must be "latest" or "v1.x"')
        modes[mode] = LevelVersion(level, version)
    exemptions = document.get("exemptions") or {}
    lists = {key: exemptions.get(key) or [] for key in ("usernames", "runtimeClasses", "namespaces")}
    for key, values in lists.items():
        if not isinstance(values, list) or not all(isinstance(v, str) and v for v in values):
            raise ValueError(f"exemptions.{key}: must be a list of non-empty strings")
    return Configuration(Policy(**modes), frozenset(lists["usernames"]), frozenset(lists["runtimeClasses"]),
                         frozenset(lists["namespaces"]))


class PodSecurity:
    name = "PodSecurity"

    def __init__(self, reader: Reader, configuration: Configuration | None = None, *,
                 evaluator: Evaluator | None = None) -> None:
        self._reader = reader
        self.configuration = configuration or Configuration()
        self._evaluator = evaluator or Evaluator(max_version=policy.Version(int(KUBERNETES_MINOR)))

    def validate(self, attributes: Attributes, hold: ExitStack) -> None:
        obj = attributes.obj
        if attributes.operation is Operation.DELETE or obj is None or attributes.resource.group not in _GROUPS:
            return
        plural = attributes.resource.plural
        if plural == "namespaces" and not attributes.resource.group:
            if not attributes.subresource:
                self._validate_namespace(attributes, obj)
        elif plural == "pods" and not attributes.resource.group:
            if attributes.subresource not in _IGNORED_POD_SUBRESOURCES:
                self._validate_pod(attributes, obj)
        elif plural in policy.WORKLOAD_RESOURCES and not attributes.subresource:
            self._validate_workload(attributes, obj)

    # -- namespaces --------------------------------------------------------------------------------

    def _validate_namespace(self, attributes: Attributes, obj: dict[str, Any]) -> None:
        name = attributes.name
        new, errors = self._policy(obj)
        if attributes.old is None:
            if errors:
                raise _invalid_labels(name, errors)
            if name in self.configuration.namespaces:
                warning.add_warning(self._exempt_namespace_warning(name, new, _labels(obj)))
            return
        old, old_errors = self._policy(attributes.old)
        if errors and (not old_errors or errors != old_errors):
            raise _invalid_labels(name, errors)
        enforce, before = new.enforce, old.enforce
        if enforce == before or enforce.level == policy.PRIVILEGED or (
                enforce.version == before.version and policy.compare_levels(enforce.level, before.level) < 1):
            return
        if name in self.configuration.namespaces:
            warning.add_warning(self._exempt_namespace_warning(name, new, _labels(obj)))
            return
        for text in self._evaluate_existing_pods(name, enforce):
            warning.add_warning(text)

    def _exempt_namespace_warning(self, name: str, new: Policy, labels: Mapping[str, Any]) -> str:
        if new.fully_privileged() or new.equivalent(self.configuration.defaults):
            return ""
        parts = [f"{mode}={getattr(new, mode)}" for mode in policy.MODES
                 if getattr(new, mode).level != policy.PRIVILEGED and (
                     policy.LABEL_PREFIX + mode in labels or policy.LABEL_PREFIX + mode + "-version" in labels)]
        return f'namespace "{name}" is exempt from Pod Security, and the policy ({", ".join(parts)}) will be ignored'

    def _evaluate_existing_pods(self, namespace: str, enforce: LevelVersion) -> list[str]:
        """upstream EvaluatePodsInNamespace: one warning per distinct reason, naming its first pod by name."""
        assert PODS is not None
        deadline = time.monotonic() + POD_CHECK_SECONDS
        pods = self._prioritize(self._reader.list_all(PODS, namespace))
        total, checked = len(pods), 0
        found: dict[str, tuple[str, int]] = {}  # reasons → (first pod name, count)
        for pod in pods[:MAX_PODS_TO_CHECK]:
            checked += 1
            violations = self._evaluator.evaluate(enforce, pod.get("metadata") or {}, pod.get("spec") or {})
            if violations:
                reason, pod_name = policy.forbidden_reasons(violations), str((pod.get("metadata") or {}).get("name"))
                first, count = found.get(reason, (pod_name, 0))
                found[reason] = (min(first, pod_name), count + 1)
            if time.monotonic() > deadline:
                break
        warnings = []
        if checked < total:
            warnings.append(f"new PodSecurity enforce level only checked against the first {checked} of {total} "
                            "existing pods")
        if found:
            warnings.append(f'existing pods in namespace "{namespace}" violate the new PodSecurity enforce level '
                            f'"{enforce}"')
        return warnings + sorted(_decorate(reason, first, count) for reason, (first, count) in found.items())

    def _prioritize(self, pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """One pod per controller first, the other replicas after (upstream prioritizePods)."""
        first, rest, seen = [], [], set()
        for pod in pods:
            if self._exempt_runtime_class(pod.get("spec") or {}):
                continue
            owner = next((o.get("uid") for o in (pod.get("metadata") or {}).get("ownerReferences") or ()
                          if isinstance(o, Mapping) and o.get("controller")), None)
            if owner is not None and owner in seen:
                rest.append(pod)
                continue
            seen.add(owner)
            first.append(pod)
        return first + rest

    # -- pods and workloads ------------------------------------------------------------------------

    def _validate_pod(self, attributes: Attributes, obj: dict[str, Any]) -> None:
        if self._exempt(attributes):
            return
        nspolicy, errors = self._namespace_policy(attributes.namespace)
        if not errors and nspolicy.fully_privileged():
            return
        if attributes.old is not None and not _significant_update(obj, attributes.old):
            return
        self._evaluate(attributes, nspolicy, errors, obj.get("metadata") or {}, obj.get("spec") or {}, enforce=True)

    def _validate_workload(self, attributes: Attributes, obj: dict[str, Any]) -> None:
        if self._exempt(attributes):
            return
        nspolicy, errors = self._namespace_policy(attributes.namespace)
        if not errors and nspolicy.warn.level == nspolicy.audit.level == policy.PRIVILEGED:
            return
        template = policy.pod_template(attributes.resource.plural, obj)
        if template is not None:
            self._evaluate(attributes, nspolicy, errors, *template, enforce=False)

    def _evaluate(self, attributes: Attributes, nspolicy: Policy, errors: list[policy.LabelError],
                  metadata: Mapping[str, Any], spec: Mapping[str, Any], *, enforce: bool) -> None:
        if self._exempt_runtime_class(spec):
            attributes.annotations.setdefault(policy.EXEMPT_ANNOTATION, "runtimeClass")
            return
        if errors:
            attributes.annotations.setdefault("error", "Failed to parse policy: " + "; ".join(
                f"{e.label}={e.value}: {e.detail}" for e in errors))
        results: dict[LevelVersion, list[Violation]] = {}

        def violations(level_version: LevelVersion) -> list[Violation]:
            if level_version not in results:
                results[level_version] = self._evaluator.evaluate(level_version, metadata, spec)
            return results[level_version]

        refused = violations(nspolicy.enforce) if enforce else []
        if enforce:
            attributes.annotations.setdefault(policy.ENFORCED_POLICY_ANNOTATION, str(nspolicy.enforce))
        if audited := violations(nspolicy.audit):  # annotated on a refused request too, as upstream
            attributes.annotations.setdefault(policy.AUDIT_VIOLATIONS_ANNOTATION, f'would violate PodSecurity '
                                         f'"{nspolicy.audit}": {policy.forbidden_detail(audited)}')
        if refused:
            raise forbidden(attributes.resource, attributes.name, f'violates PodSecurity "{nspolicy.enforce}": '
                            f"{policy.forbidden_detail(refused)}")
        if warned := violations(nspolicy.warn):
            warning.add_warning(f'would violate PodSecurity "{nspolicy.warn}": {policy.forbidden_detail(warned)}')

    # -- helpers -----------------------------------------------------------------------------------

    def _exempt(self, attributes: Attributes) -> bool:
        """A namespace or user exemption (upstream checks both before reading the namespace)."""
        namespace = attributes.namespace
        if namespace and namespace in self.configuration.namespaces:
            attributes.annotations.setdefault(policy.EXEMPT_ANNOTATION, "namespace")
            return True
        user = current_user.get()
        if user is not None and user.username in self.configuration.usernames:
            attributes.annotations.setdefault(policy.EXEMPT_ANNOTATION, "user")
            return True
        return False

    def _exempt_runtime_class(self, spec: Mapping[str, Any]) -> bool:
        runtime_class = spec.get("runtimeClassName")
        return bool(runtime_class) and runtime_class in self.configuration.runtime_classes

    def _policy(self, namespace: Mapping[str, Any]) -> tuple[Policy, list[policy.LabelError]]:
        return policy.policy_from_labels(_labels(namespace), self.configuration.defaults)

    def _namespace_policy(self, namespace: str) -> tuple[Policy, list[policy.LabelError]]:
        assert NAMESPACES is not None
        stored = self._reader.get(NAMESPACES, "", namespace)
        if stored is None:  # NamespaceLifecycle refuses a missing namespace before this runs
            raise status.internal_error(f'failed to lookup namespace "{namespace}"')
        return self._policy(stored)


def _labels(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    labels = (obj.get("metadata") or {}).get("labels")
    return labels if isinstance(labels, Mapping) else {}


def _invalid_labels(name: str, errors: list[policy.LabelError]) -> status.APIError:
    return status.invalid("Namespace", name, [FieldError.invalid(f"metadata.labels[{e.label}]", e.value, e.detail)
                                              for e in errors])


def _decorate(reason: str, first: str, count: int) -> str:
    if count == 1:
        return f"{first}: {reason}"
    if count == 2:
        return f"{first} (and 1 other pod): {reason}"
    return f"{first} (and {count - 1} other pods): {reason}"


def _significant_update(pod: Mapping[str, Any], old: Mapping[str, Any]) -> bool:
    """upstream isSignificantPodUpdate: only a changed container image (or an added ephemeral container)
    is checked again; other pod updates could not change what the checks read."""
    spec, old_spec = pod.get("spec") or {}, old.get("spec") or {}
    for key in ("containers", "initContainers"):
        new_list, old_list = spec.get(key) or [], old_spec.get(key) or []
        if len(new_list) != len(old_list) or any(
                (n or {}).get("image") != (o or {}).get("image") for n, o in zip(new_list, old_list, strict=True)):
            return True
    old_ephemeral = {c.get("name"): c for c in old_spec.get("ephemeralContainers") or () if isinstance(c, Mapping)}
    return any(c.get("name") not in old_ephemeral or c.get("image") != old_ephemeral[c.get("name")].get("image")
               for c in spec.get("ephemeralContainers") or () if isinstance(c, Mapping))
