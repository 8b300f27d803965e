"""Levels, versions, a namespace's policy from its labels, and the evaluator that runs a level's checks at a
version (upstream: k8s.io/pod-security-admission/api/helpers.go, api/constants.go, policy/registry.go,
policy/checks.go `AggregateCheckResults`).

- A version is `latest` or `v1.<minor>`; a check applies from its minimum version until its next version.
  `restricted` runs every baseline check too, except those a restricted check overrides at that version.
  Checks run baseline first, then restricted, each group in the order of its IDs, as upstream's.
- The evaluator has a newest version (`max_version`, the server's own Kubernetes version, as upstream's
  kube-apiserver passes its emulation version): `latest` and every newer label value evaluate as that
  version, so checks upstream added after it do not apply.
- Labels: `pod-security.kubernetes.io/{enforce,audit,warn}[-version]`; a label that does not parse is an
  error (a namespace write with one is refused), and audit and warn then fail open to privileged. Without a
  warn label, warn follows an enforce level stricter than the default's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from control.api.podsecurity.checks import BASELINE, CHECKS, RESTRICTED, Check, CheckFn, Violation

PRIVILEGED = "privileged"
LEVELS = (PRIVILEGED, BASELINE, RESTRICTED)
LABEL_PREFIX = "pod-security.kubernetes.io/"
MODES = ("enforce", "audit", "warn")
AUDIT_VIOLATIONS_ANNOTATION = "pod-security.kubernetes.io/audit-violations"
ENFORCED_POLICY_ANNOTATION = "pod-security.kubernetes.io/enforce-policy"
EXEMPT_ANNOTATION = "pod-security.kubernetes.io/exempt"
_VERSION = re.compile(r"^v1\.([0-9]|[1-9][0-9]*)$")


@dataclass(frozen=True, slots=True, order=True)
class Version:
    """`v1.<minor>`, or latest (minor None), which is newer than every version."""

    minor: int | None = None

    def older(self, other: Version) -> bool:
        if self.minor is None:
            return False
        return other.minor is None or self.minor < other.minor

    def __str__(self) -> str:
        return "latest" if self.minor is None else f"v1.{self.minor}"


LATEST = Version()


@dataclass(frozen=True, slots=True)
class LevelVersion:
    level: str
    version: Version = LATEST

    def __str__(self) -> str:
        return f"{self.level}:{self.version}"

    def equivalent(self, other: LevelVersion) -> bool:
        return (self.level == other.level == PRIVILEGED) or self == other


@dataclass(frozen=True, slots=True)
class Policy:
    enforce: LevelVersion = LevelVersion(PRIVILEGED)
    audit: LevelVersion = LevelVersion(PRIVILEGED)
    warn: LevelVersion = LevelVersion(PRIVILEGED)

    def fully_privileged(self) -> bool:
        return self.enforce.level == self.audit.level == self.warn.level == PRIVILEGED

    def equivalent(self, other: Policy) -> bool:
        return all(getattr(self, m).equivalent(getattr(other, m)) for m in MODES)


def parse_level(value: str) -> str | None:
    return value if value in LEVELS else None


def parse_version(value: str) -> Version | None:
    if value == "latest":
        return LATEST
    match = _VERSION.match(value)
    return Version(int(match.group(1))) if match else None


def compare_levels(a: str, b: str) -> int:
    return (LEVELS.index(a) > LEVELS.index(b)) - (LEVELS.index(a) < LEVELS.index(b))


@dataclass(frozen=True, slots=True)
class LabelError:
    """A label whose value does not parse: (label key, value, why), a field error on metadata.labels[key]."""

    label: str
    value: str
    detail: str


def policy_from_labels(labels: Mapping[str, Any] | None, defaults: Policy) -> tuple[Policy, list[LabelError]]:
    """upstream PolicyToEvaluate: the namespace's policy over `defaults`, and the labels that did not parse."""
    policy, errors = defaults, list[LabelError]()
    if not labels:
        return policy, errors
    levels_error = f"must be one of {', '.join(LEVELS)}"
    has = {mode: False for mode in MODES}
    for mode in MODES:
        current: LevelVersion = getattr(policy, mode)
        key = LABEL_PREFIX + mode
        if key in labels:
            level = parse_level(str(labels[key]))
            if level is None:
                errors.append(LabelError(key, str(labels[key]), levels_error))
                level = RESTRICTED if mode == "enforce" else PRIVILEGED  # enforce fails closed, the others open
            else:
                has[mode] = True
            current = replace(current, level=level)
        if key + "-version" in labels:
            version = parse_version(str(labels[key + "-version"]))
            if version is None:
                errors.append(LabelError(key + "-version", str(labels[key + "-version"]), 'must be "latest" or "v1.x"'))
                version = LATEST
            current = replace(current, version=version)
        policy = replace(policy, **{mode: current})
    warn_key = LABEL_PREFIX + "warn"
    if warn_key not in labels and has["enforce"] and compare_levels(policy.enforce.level, policy.warn.level) > 0:
        version = policy.warn.version if warn_key + "-version" in labels else policy.enforce.version
        policy = replace(policy, warn=LevelVersion(policy.enforce.level, version))
    return policy, errors


class Evaluator:
    """The checks of each level at each version, computed once (upstream checkRegistry)."""

    def __init__(self, checks: tuple[Check, ...] = CHECKS, *, max_version: Version = LATEST) -> None:
        newest = max(v.minimum[1] for c in checks for v in c.versions)
        self.max_version = Version(newest) if max_version.minor is None or max_version.minor > newest \
            else max_version
        assert self.max_version.minor is not None
        order = sorted(c.id for c in checks if c.level == BASELINE) + sorted(
            c.id for c in checks if c.level == RESTRICTED)
        self._checks: dict[tuple[str, int], list[CheckFn]] = {}
        for minor in range(self.max_version.minor + 1):
            baseline: dict[str, CheckFn] = {}
            restricted: dict[str, CheckFn] = {}
            overridden: set[str] = set()
            for check in checks:
                active = [v for v in check.versions if v.minimum <= (1, minor)]
                if not active:
                    continue
                target = baseline if check.level == BASELINE else restricted
                target[check.id] = active[-1].check
                overridden.update(active[-1].overrides if check.level == RESTRICTED else ())
            restricted.update({k: v for k, v in baseline.items() if k not in overridden})
            self._checks[(BASELINE, minor)] = [baseline[i] for i in order if i in baseline]
            self._checks[(RESTRICTED, minor)] = [restricted[i] for i in order if i in restricted]

    def evaluate(self, level_version: LevelVersion, metadata: Mapping[str, Any],
                 spec: Mapping[str, Any]) -> list[Violation]:
        """The violations of a pod (its metadata and spec) at a level and version, in check order."""
        if level_version.level == PRIVILEGED:
            return []
        version = level_version.version
        minor = self.max_version.minor if self.max_version.older(version) else version.minor
        assert minor is not None
        return [v for check in self._checks[(level_version.level, minor)] if (v := check(metadata, spec))]


def forbidden_reasons(violations: list[Violation]) -> str:
    return ", ".join(v.reason for v in violations)


def forbidden_detail(violations: list[Violation]) -> str:
    """upstream AggregateCheckResult.ForbiddenDetail: `reason (detail), reason (detail)`."""
    return ", ".join(f"{v.reason} ({v.detail})" if v.detail else v.reason for v in violations)


# The workload resources whose pod template is checked for warn and audit (upstream DefaultPodSpecExtractor).
_TEMPLATE_PATHS: dict[str, tuple[str, ...]] = {
    "replicationcontrollers": ("spec", "template"), "podtemplates": ("template",),
    "replicasets": ("spec", "template"), "deployments": ("spec", "template"),
    "statefulsets": ("spec", "template"), "daemonsets": ("spec", "template"), "jobs": ("spec", "template"),
    "cronjobs": ("spec", "jobTemplate", "spec", "template"),
}
WORKLOAD_RESOURCES = frozenset(_TEMPLATE_PATHS)


def pod_template(plural: str, obj: Mapping[str, Any]) -> tuple[Mapping[str, Any], Mapping[str, Any]] | None:
    """(metadata, spec) of a workload's pod template, or None when the object has none."""
    node: Any = obj
    for key in _TEMPLATE_PATHS.get(plural, ("-",)):
        node = node.get(key) if isinstance(node, Mapping) else None
    if not isinstance(node, Mapping):
        return None
    metadata, spec = node.get("metadata"), node.get("spec")
    return (metadata if isinstance(metadata, Mapping) else {}), (spec if isinstance(spec, Mapping) else {})
