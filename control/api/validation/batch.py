"""Validation of the batch/v1 kinds: Jobs and CronJobs.

Upstream: pkg/apis/batch/validation/validation.go (ValidateJobSpec, ValidateJobUpdate, validatePodFailurePolicy,
ValidateCronJobSpec, validateTimeZone). The cron schedule parser mirrors github.com/robfig/cron/v3's standard
parser, which upstream uses, with its error messages.

Rules kept because the Job controller depends on them: a Job's template pods restart OnFailure or Never, and
its selector, when present, must select its template (the server generates both, control/api/batch.py).
Left out: per-index backoff, the success policy and `@every` in a cron schedule.
"""

from __future__ import annotations

import re
import zoneinfo
from collections.abc import Mapping
from typing import Any

from control.api.validation.pods import SELECTOR_MISMATCH_MESSAGE, template_labels, validate_pod_template
from control.api.validation.primitives import Check, Validator, join, label_selector, validate_object_meta
from control.apimachinery.validation import FieldError

JOB_RESTART_MESSAGE = 'valid values: "OnFailure", "Never"'


def validate_job_spec(c: Check, spec: Mapping[str, Any], path: str) -> None:
    """Upstream ValidateJobSpec, also run on a CronJob's `spec.jobTemplate.spec`."""
    for key in ("parallelism", "completions", "backoffLimit", "activeDeadlineSeconds", "ttlSecondsAfterFinished"):
        c.nonnegative(spec, key, join(path, key))
    mode = c.supported(spec, "completionMode", join(path, "completionMode"), ("NonIndexed", "Indexed"))
    if mode == "Indexed" and spec.get("completions") is None:
        c.add([FieldError.required(join(path, "completions"), "when completion mode is Indexed")])
    c.supported(spec, "podReplacementPolicy", join(path, "podReplacementPolicy"), ("TerminatingOrFailed", "Failed"))
    selector = label_selector(c, spec, join(path, "selector"), kind="job", required=False)
    if (template := c.obj(spec, "template", join(path, "template"))) is None:
        return
    if selector is not None and not selector.empty and not selector.matches(template_labels(template)):
        c.add([FieldError.invalid(join(path, "template.metadata.labels"), template_labels(template),
                                  SELECTOR_MISMATCH_MESSAGE)])
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


VALIDATORS: dict[str, Validator] = {
    "jobs": _job,
    "cronjobs": _cron_job,
}
