"""Validation of the workload kinds: apps/v1, batch/v1 and the core ReplicationController, and the
policy/v1 PodDisruptionBudget that guards them.

Upstream: pkg/apis/apps/validation/validation.go (ValidateDeploymentSpec, ValidateReplicaSetSpec,
ValidateDaemonSetSpec, ValidateStatefulSetSpec and their Update variants, ValidatePodTemplateSpecForReplicaSet),
pkg/apis/core/validation (ValidateReplicationControllerSpec, ValidatePodTemplateSpecForRC) and
pkg/apis/batch/validation/validation.go (ValidateJobSpec, ValidateCronJobSpec), pkg/apis/policy/validation
(ValidatePodDisruptionBudget, which shares the int-or-percent and selector checks). The cron schedule parser
mirrors github.com/robfig/cron/v3's standard parser, which upstream uses, with its error messages.

Split from `validation.py` only for size: every kind here embeds a pod template, validated with that
module's pod spec checks, and `validation.validate` dispatches here through `APPS_VALIDATORS`.

Rules kept because controllers depend on them: a controller's selector must be non-empty and select its
own template (else it would adopt or create pods it can never count), its template's pods must restart
Always (a Job's: OnFailure or Never), and the apps/v1 selector cannot change after creation.
A Job's selector, when present, must select its template (the server generates both, control/api/batch.py);
its pod failure policy is checked as upstream's validatePodFailurePolicy.
Left out: per-index backoff, the success policy, `@every` in a cron schedule, and the volume claim
templates of a StatefulSet.
"""

from __future__ import annotations

import re
import zoneinfo
from collections.abc import Callable, Mapping
from typing import Any

from control.api.validation import (
    NEGATIVE_MESSAGE,
    Check,
    join,
    validate_object_meta,
    validate_pod_template,
)
from control.apimachinery.labels import Selector, SelectorError, selector_from_label_selector
from control.apimachinery.validation import FieldError, regex_error, validate_labels

_PERCENT_FMT = "[0-9]+%"
_PERCENT = re.compile(_PERCENT_FMT)
_PERCENT_MSG = "a valid percent string must be a numeric string followed by an ending '%'"
_MISMATCH = "`selector` does not match template `labels`"
_STATEFULSET_UPDATABLE = ("replicas", "ordinals", "template", "updateStrategy",
                          "persistentVolumeClaimRetentionPolicy", "minReadySeconds")
STATEFULSET_UPDATE_MESSAGE = (
    "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', "
    "'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"
)
JOB_RESTART_MESSAGE = 'valid values: "OnFailure", "Never"'


def _template_labels(template: Mapping[str, Any]) -> dict[str, str]:
    """The template's string labels, read quietly: validate_pod_template reports the rest."""
    metadata = template.get("metadata")
    labels = metadata.get("labels") if isinstance(metadata, dict) else None
    return {k: v for k, v in labels.items() if isinstance(v, str)} if isinstance(labels, dict) else {}


def _label_selector(c: Check, spec: Mapping[str, Any], path: str, *, kind: str,
                    required: bool = True) -> Selector | None:
    """A metav1.LabelSelector that must be well formed, and (`required`, a controller's) present and
    non-empty."""
    raw = spec.get("selector")
    if raw is None:
        if required:
            c.add([FieldError.required(path)])
        return None
    if (selector := c.obj(spec, "selector", path)) is None:
        return None
    before = len(c.errors)
    labels_path = join(path, "matchLabels")
    cleaned: dict[str, Any] = {"matchLabels": c.strings(selector, "matchLabels", labels_path), "matchExpressions": []}
    c.add(validate_labels(cleaned["matchLabels"], path=labels_path))
    for expression_path, expression in c.items(selector, "matchExpressions", join(path, "matchExpressions")):
        cleaned["matchExpressions"].append({
            "key": c.text(expression, "key", join(expression_path, "key")),
            "operator": c.text(expression, "operator", join(expression_path, "operator")),
            "values": c.texts(expression, "values", join(expression_path, "values")),
        })
    if len(c.errors) > before:
        return None
    try:
        parsed = selector_from_label_selector(cleaned)
    except SelectorError as exc:
        c.add([FieldError.invalid(path, raw, str(exc))])
        return None
    if parsed.empty and required:
        c.add([FieldError.invalid(path, raw, f"empty selector is invalid for {kind}")])
        return None
    return parsed


def _controller_template(c: Check, template: Mapping[str, Any], path: str, *, selects: bool, kind: str,
                         claim_volumes: frozenset[str] = frozenset()) -> None:
    """Upstream ValidatePodTemplateSpecForReplicaSet/ForRC: selected labels, pods that always restart."""
    if not selects:
        c.add([FieldError.invalid(join(path, "metadata.labels"), _template_labels(template), _MISMATCH)])
    if (spec := validate_pod_template(c, template, path, claim_volumes=claim_volumes)) is None:
        return
    policy = spec.get("restartPolicy")
    if isinstance(policy, str) and policy != "Always":
        c.add([FieldError.not_supported(join(path, "spec.restartPolicy"), policy, ["Always"])])
    if spec.get("activeDeadlineSeconds") is not None:
        c.add([FieldError.forbidden(join(path, "spec.activeDeadlineSeconds"),
                                    f"activeDeadlineSeconds in {kind} is not Supported")])


def _int_or_percent(c: Check, parent: Mapping[str, Any], key: str, path: str,
                    *, at_most_100: bool | None = None) -> bool:
    """A rolling update or disruption budget bound (`1` or `"25%"`); returns whether it is a valid zero.
    Percentages above 100% are refused for `maxUnavailable`, or where `at_most_100` says so."""
    value = parent.get(key)
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            c.add([FieldError.invalid(path, value, NEGATIVE_MESSAGE)])
        return value == 0
    if isinstance(value, str):
        if not _PERCENT.fullmatch(value):
            c.add([FieldError.invalid(path, value, regex_error(_PERCENT_MSG, _PERCENT_FMT, "1%", "93%"))])
            return False
        if (key == "maxUnavailable" if at_most_100 is None else at_most_100) and int(value[:-1]) > 100:
            c.add([FieldError.invalid(path, value, "must not be greater than 100%")])
        return int(value[:-1]) == 0
    if value is not None:
        c.add([FieldError.invalid(path, value, "must be an integer or a percent string")])
    return False


def _rolling_update(c: Check, strategy: Mapping[str, Any], path: str) -> None:
    if (rolling := c.obj(strategy, "rollingUpdate", path)) is None or not rolling:
        return
    unavailable_zero = _int_or_percent(c, rolling, "maxUnavailable", join(path, "maxUnavailable"))
    surge_zero = _int_or_percent(c, rolling, "maxSurge", join(path, "maxSurge"))
    if unavailable_zero and surge_zero:
        c.add([FieldError.invalid(join(path, "maxUnavailable"), rolling["maxUnavailable"],
                                  "may not be 0 when `maxSurge` is 0")])


def _claim_names(spec: Mapping[str, Any]) -> frozenset[str]:
    """The volume names a StatefulSet's volumeClaimTemplates give its pods (the controller adds them)."""
    claims = spec.get("volumeClaimTemplates")
    if not isinstance(claims, list):
        return frozenset()
    return frozenset(name for claim in claims if isinstance(claim, Mapping)
                     and isinstance(meta := claim.get("metadata"), Mapping)
                     and isinstance(name := meta.get("name"), str))


def _workload(c: Check, obj: Mapping[str, Any], old: Mapping[str, Any] | None, *, kind: str,
              replicas: bool = True) -> dict[str, Any] | None:
    """What deployments, replica sets, daemon sets and stateful sets share; returns the spec."""
    if (spec := c.obj(obj, "spec", "spec")) is None:
        return None
    for key in ("replicas", "minReadySeconds", "revisionHistoryLimit") if replicas else (
            "minReadySeconds", "revisionHistoryLimit"):
        c.nonnegative(spec, key, join("spec", key))
    selector = _label_selector(c, spec, "spec.selector", kind=kind.lower())
    if (template := c.obj(spec, "template", "spec.template")) is not None:
        selects = selector is None or selector.matches(_template_labels(template))
        claims = _claim_names(spec) if kind == "StatefulSet" else frozenset()
        _controller_template(c, template, "spec.template", selects=selects, kind=kind, claim_volumes=claims)
    old_spec = old.get("spec") if old is not None else None
    if isinstance(old_spec, dict) and kind != "StatefulSet":
        c.immutable(spec.get("selector"), old_spec.get("selector"), "spec.selector")
    return spec


def _deployment(c: Check, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
    if (spec := _workload(c, obj, old, kind="Deployment")) is None:
        return
    if (strategy := c.obj(spec, "strategy", "spec.strategy")) is not None:
        kind = c.supported(strategy, "type", "spec.strategy.type", ("Recreate", "RollingUpdate"), required=True)
        if kind == "Recreate" and strategy.get("rollingUpdate") is not None:
            c.add([FieldError.forbidden("spec.strategy.rollingUpdate",
                                        "may not be specified when strategy `type` is 'Recreate'")])
        elif kind == "RollingUpdate":
            _rolling_update(c, strategy, "spec.strategy.rollingUpdate")
    deadline = c.integer(spec, "progressDeadlineSeconds", "spec.progressDeadlineSeconds")
    if deadline is not None:
        min_ready = spec.get("minReadySeconds")
        if deadline < 0:
            c.add([FieldError.invalid("spec.progressDeadlineSeconds", deadline, NEGATIVE_MESSAGE)])
        elif isinstance(min_ready, int) and deadline <= min_ready:
            c.add([FieldError.invalid("spec.progressDeadlineSeconds", deadline,
                                      "must be greater than minReadySeconds")])


def _replica_set(c: Check, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
    _workload(c, obj, old, kind="ReplicaSet")


def _daemon_set(c: Check, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
    if (spec := _workload(c, obj, old, kind="DaemonSet", replicas=False)) is None:
        return
    if (strategy := c.obj(spec, "updateStrategy", "spec.updateStrategy")) is not None:
        kind = c.supported(strategy, "type", "spec.updateStrategy.type", ("RollingUpdate", "OnDelete"),
                           required=True)
        if kind == "RollingUpdate":
            _rolling_update(c, strategy, "spec.updateStrategy.rollingUpdate")


def _stateful_set(c: Check, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
    if (spec := _workload(c, obj, old, kind="StatefulSet")) is None:
        return
    c.supported(spec, "podManagementPolicy", "spec.podManagementPolicy", ("OrderedReady", "Parallel"),
                required=True)
    if (strategy := c.obj(spec, "updateStrategy", "spec.updateStrategy")) is not None:
        kind = c.supported(strategy, "type", "spec.updateStrategy.type", ("RollingUpdate", "OnDelete"),
                           required=True)
        path = "spec.updateStrategy.rollingUpdate"
        if kind == "RollingUpdate" and (rolling := c.obj(strategy, "rollingUpdate", path)):
            c.nonnegative(rolling, "partition", "spec.updateStrategy.rollingUpdate.partition")
    retention_path = "spec.persistentVolumeClaimRetentionPolicy"
    if (retention := c.obj(spec, "persistentVolumeClaimRetentionPolicy", retention_path)) is not None:
        for key in ("whenDeleted", "whenScaled"):
            c.supported(retention, key, join(retention_path, key), ("Retain", "Delete"))
    old_spec = old.get("spec") if old is not None else None
    if isinstance(old_spec, dict):
        def fixed(s: Mapping[str, Any]) -> dict[str, Any]:
            return {k: v for k, v in s.items() if k not in _STATEFULSET_UPDATABLE}
        if fixed(spec) != fixed(old_spec):
            c.add([FieldError.forbidden("spec", STATEFULSET_UPDATE_MESSAGE)])


def _controller_revision(c: Check, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
    """ValidateControllerRevision(Update): data is mandatory and immutable, the revision not negative."""
    if obj.get("data") is None:
        c.add([FieldError.required("data", "data is mandatory")])
    c.nonnegative(obj, "revision", "revision")
    if old is not None:
        c.immutable(obj.get("data"), old.get("data"), "data")


def _replication_controller(c: Check, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
    """Upstream ValidateReplicationControllerSpec: the selector is a plain map, the template a pointer."""
    if (spec := c.obj(obj, "spec", "spec")) is None:
        return
    for key in ("replicas", "minReadySeconds"):
        c.nonnegative(spec, key, join("spec", key))
    selector = c.strings(spec, "selector", "spec.selector")
    if not selector and isinstance(spec.get("selector"), dict | None):
        c.add([FieldError.required("spec.selector")])
    c.add(validate_labels(selector, path="spec.selector"))
    if spec.get("template") is None:
        c.add([FieldError.required("spec.template")])
    elif (template := c.obj(spec, "template", "spec.template")) is not None:
        labels = _template_labels(template)
        selects = all(labels.get(key) == value for key, value in selector.items())
        _controller_template(c, template, "spec.template", selects=selects, kind="ReplicationController")


def validate_job_spec(c: Check, spec: Mapping[str, Any], path: str) -> None:
    """Upstream ValidateJobSpec, also run on a CronJob's `spec.jobTemplate.spec`."""
    for key in ("parallelism", "completions", "backoffLimit", "activeDeadlineSeconds", "ttlSecondsAfterFinished"):
        c.nonnegative(spec, key, join(path, key))
    mode = c.supported(spec, "completionMode", join(path, "completionMode"), ("NonIndexed", "Indexed"))
    if mode == "Indexed" and spec.get("completions") is None:
        c.add([FieldError.required(join(path, "completions"), "when completion mode is Indexed")])
    c.supported(spec, "podReplacementPolicy", join(path, "podReplacementPolicy"), ("TerminatingOrFailed", "Failed"))
    selector = _label_selector(c, spec, join(path, "selector"), kind="job", required=False)
    if (template := c.obj(spec, "template", join(path, "template"))) is None:
        return
    if selector is not None and not selector.empty and not selector.matches(_template_labels(template)):
        c.add([FieldError.invalid(join(path, "template.metadata.labels"), _template_labels(template), _MISMATCH)])
    pod_spec = validate_pod_template(c, template, join(path, "template"))
    if pod_spec is not None and pod_spec.get("restartPolicy") not in ("OnFailure", "Never"):
        c.add([FieldError.required(join(path, "template.spec.restartPolicy"), JOB_RESTART_MESSAGE)])
    if spec.get("podFailurePolicy") is not None:
        _pod_failure_policy(c, spec, join(path, "podFailurePolicy"), mode=mode)
        if pod_spec is not None and pod_spec.get("restartPolicy") != "Never":
            c.add([FieldError.invalid(join(path, "template.spec.restartPolicy"), pod_spec.get("restartPolicy"),
                                      'only "Never" is supported when podFailurePolicy is specified')])


_POD_FAILURE_ACTIONS = ("Count", "FailIndex", "FailJob", "Ignore")


def _pod_failure_policy(c: Check, spec: Mapping[str, Any], path: str, *, mode: str | None) -> None:
    """Upstream validatePodFailurePolicy: each rule has a known action and exactly one of onExitCodes
    (In/NotIn over distinct values, 0 not allowed with In) or onPodConditions (a type, status True/False/
    Unknown); FailIndex only in Indexed mode."""
    if (policy := c.obj(spec, "podFailurePolicy", path)) is None:
        return
    for rule_path, rule in c.items(policy, "rules", join(path, "rules")):
        action = c.supported(rule, "action", join(rule_path, "action"), _POD_FAILURE_ACTIONS, required=True)
        if action == "FailIndex" and mode != "Indexed":
            c.add([FieldError.invalid(join(rule_path, "action"), action,
                                      "can only be used when completionMode is Indexed")])
        codes, conditions = rule.get("onExitCodes"), rule.get("onPodConditions")
        if (codes is None) == (conditions is None):
            c.add([FieldError.invalid(rule_path, rule,
                                      "specifying one of OnExitCodes and OnPodConditions is required")])
        if codes is not None and (requirement := c.obj(rule, "onExitCodes", join(rule_path, "onExitCodes"))):
            codes_path = join(rule_path, "onExitCodes")
            operator = c.supported(requirement, "operator", join(codes_path, "operator"), ("In", "NotIn"),
                                   required=True)
            values = requirement.get("values")
            if not isinstance(values, list) or not values:
                c.add([FieldError.required(join(codes_path, "values"), "at least one value is required")])
            elif len(set(map(str, values))) != len(values):
                c.add([FieldError.invalid(join(codes_path, "values"), values, "duplicate value")])
            elif operator == "In" and 0 in values:
                c.add([FieldError.invalid(join(codes_path, "values"), 0,
                                          "must not be 0 for the In operator")])
        for pattern_path, pattern in c.items(rule, "onPodConditions", join(rule_path, "onPodConditions")):
            if not c.text(pattern, "type", join(pattern_path, "type")):
                c.add([FieldError.required(join(pattern_path, "type"))])
            c.supported(pattern, "status", join(pattern_path, "status"), ("True", "False", "Unknown"))


def _job(c: Check, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
    if (spec := c.obj(obj, "spec", "spec")) is None:
        return
    validate_job_spec(c, spec, "spec")
    old_spec = old.get("spec") if old is not None else None
    if isinstance(old_spec, dict):
        c.immutable(spec.get("template"), old_spec.get("template"), "spec.template")
        for key in ("selector", "completionMode", "podFailurePolicy", "manualSelector"):
            c.immutable(spec.get(key), old_spec.get(key), join("spec", key))


# --- cron schedules (robfig/cron/v3 ParseStandard) -----------------------------------------------------

_DESCRIPTORS = frozenset({"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"})
_MONTHS = {name: i + 1 for i, name in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"))}
_DAYS = {name: i for i, name in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
# (minimum, maximum, names) of minute, hour, day of month, month, day of week
_CRON_FIELDS: tuple[tuple[int, int, Mapping[str, int]], ...] = (
    (0, 59, {}), (0, 23, {}), (1, 31, {}), (1, 12, _MONTHS), (0, 6, _DAYS))
_INT = re.compile("[+-]?[0-9]+")


class CronError(ValueError):
    """A schedule robfig/cron refuses; the message is its error text."""


def _cron_int(text: str) -> int:
    if not _INT.fullmatch(text):
        raise CronError(f'failed to parse int from {text}: strconv.Atoi: parsing "{text}": invalid syntax')
    if (number := int(text)) < 0:
        raise CronError(f"negative number ({number}) not allowed: {text}")
    return number


def _cron_range(expr: str, low: int, high: int, names: Mapping[str, int]) -> None:
    range_and_step = expr.split("/")
    bounds = range_and_step[0].split("-")
    single = len(bounds) == 1
    if bounds[0] in ("*", "?"):
        start, end = low, high
    else:
        start = names[bounds[0].lower()] if bounds[0].lower() in names else _cron_int(bounds[0])
        if len(bounds) == 1:
            end = start
        elif len(bounds) == 2:
            end = names[bounds[1].lower()] if bounds[1].lower() in names else _cron_int(bounds[1])
        else:
            raise CronError(f"too many hyphens: {expr}")
    if len(range_and_step) == 2:
        step = _cron_int(range_and_step[1])
        if single and bounds[0] not in ("*", "?"):
            end = high  # "N/step" means "N-max/step"
    elif len(range_and_step) > 2:
        raise CronError(f"too many slashes: {expr}")
    else:
        step = 1
    if start < low:
        raise CronError(f"beginning of range ({start}) below minimum ({low}): {expr}")
    if end > high:
        raise CronError(f"end of range ({end}) above maximum ({high}): {expr}")
    if start > end:
        raise CronError(f"beginning of range ({start}) beyond end of range ({end}): {expr}")
    if step == 0:
        raise CronError(f"step of range should be a positive number: {expr}")


def check_schedule(schedule: str) -> None:
    """Raise CronError unless `schedule` is five cron fields or a descriptor such as `@daily`."""
    if schedule.startswith("@"):
        if schedule not in _DESCRIPTORS:
            raise CronError(f"unrecognized descriptor: {schedule}")
        return
    fields = schedule.split()
    if len(fields) != 5:
        raise CronError(f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]")
    for field, (low, high, names) in zip(fields, _CRON_FIELDS, strict=True):
        for expr in field.split(","):
            _cron_range(expr, low, high, names)


def time_zone_error(zone: str) -> str | None:
    """Upstream validateTimeZone: an IANA zone name the host's time zone database knows, never `Local`."""
    if zone.lower() == "local":
        return "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"
    try:
        zoneinfo.ZoneInfo(zone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return f"unknown time zone {zone}"
    return None


def _cron_job(c: Check, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
    if (spec := c.obj(obj, "spec", "spec")) is None:
        return
    schedule = c.text(spec, "schedule", "spec.schedule")
    if schedule == "":
        c.add([FieldError.required("spec.schedule")])
    elif schedule is not None and "TZ" in schedule:
        c.add([FieldError.invalid("spec.schedule", schedule,
                                  "cannot use TZ or CRON_TZ in schedule, use timeZone field instead")])
    elif schedule is not None:
        try:
            check_schedule(schedule)
        except CronError as exc:
            c.add([FieldError.invalid("spec.schedule", schedule, str(exc))])
    c.supported(spec, "concurrencyPolicy", "spec.concurrencyPolicy", ("Allow", "Forbid", "Replace"), required=True)
    if (zone := c.text(spec, "timeZone", "spec.timeZone")) and (message := time_zone_error(zone)):
        c.add([FieldError.invalid("spec.timeZone", zone, message)])
    for key in ("startingDeadlineSeconds", "successfulJobsHistoryLimit", "failedJobsHistoryLimit"):
        c.nonnegative(spec, key, join("spec", key))
    if (job_template := c.obj(spec, "jobTemplate", "spec.jobTemplate")) is None:
        return
    if (metadata := c.obj(job_template, "metadata", "spec.jobTemplate.metadata")) is not None:
        validate_object_meta(c, metadata, "spec.jobTemplate.metadata", name_validator=None)
    if (job_spec := c.obj(job_template, "spec", "spec.jobTemplate.spec")) is not None:
        validate_job_spec(c, job_spec, "spec.jobTemplate.spec")


def _pod_disruption_budget(c: Check, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
    """Upstream pkg/apis/policy/validation ValidatePodDisruptionBudget (policy/v1): minAvailable xor
    maxUnavailable, each a non-negative int or a percent up to 100%; an optional, well-formed selector
    (in policy/v1 an empty one selects every pod of the namespace); the status counts not negative."""
    if (spec := c.obj(obj, "spec", "spec")) is not None:
        if spec.get("minAvailable") is not None and spec.get("maxUnavailable") is not None:
            c.add([FieldError.invalid("spec", spec, "minAvailable and maxUnavailable cannot be both set")])
        for key in ("minAvailable", "maxUnavailable"):
            _int_or_percent(c, spec, key, join("spec", key), at_most_100=True)
        _label_selector(c, spec, "spec.selector", kind="poddisruptionbudget", required=False)
        c.supported(spec, "unhealthyPodEvictionPolicy", "spec.unhealthyPodEvictionPolicy",
                    ("AlwaysAllow", "IfHealthyBudget"))
    if (status := c.obj(obj, "status", "status")) is not None:
        for key in ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods"):
            c.nonnegative(status, key, join("status", key))


APPS_VALIDATORS: dict[str, Callable[[Check, Mapping[str, Any], Mapping[str, Any] | None], None]] = {
    "deployments": _deployment,
    "replicasets": _replica_set,
    "daemonsets": _daemon_set,
    "statefulsets": _stateful_set,
    "replicationcontrollers": _replication_controller,
    "controllerrevisions": _controller_revision,
    "jobs": _job,
    "cronjobs": _cron_job,
    "poddisruptionbudgets": _pod_disruption_budget,
}
