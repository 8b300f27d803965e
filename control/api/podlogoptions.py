"""`pods/log` options: the query parameters of `GET /api/v1/namespaces/{ns}/pods/{name}/log` and of the
kubelet's `/containerLogs/{ns}/{pod}/{container}`, read and validated once for both.

Upstream: k8s.io/api/core/v1 `PodLogOptions` (container, follow, previous, sinceSeconds, sinceTime,
timestamps, tailLines, limitBytes; the query conversion in zz_generated.conversion.go) and
pkg/apis/core/validation `ValidatePodLogOptions` (its messages are kept). A value that does not parse
(`tailLines=x`) is a `ValueError` (the API server answers 400 as upstream's decoder does); one that parses
but is out of range is a list of field errors (422 `PodLogOptions "<pod>" is invalid: ...`).
The container choice for a pod without `container` (upstream's validateContainer in
pkg/registry/core/pod/strategy.go) lives here too: it is the API server's, but a pure rule.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from control.apimachinery.meta import parse_timestamp
from control.apimachinery.validation import FieldError

# The query parameters pods/log takes and the kubelet is sent (container goes into the kubelet's path).
PARAMETERS = ("follow", "previous", "timestamps", "tailLines", "limitBytes", "sinceSeconds", "sinceTime")
_TRUE = ("true", "1", "t", "True", "TRUE", "T")  # Go's strconv.ParseBool
_FALSE = ("false", "0", "f", "False", "FALSE", "F", "")


@dataclass(frozen=True)
class PodLogOptions:
    container: str = ""
    follow: bool = False
    previous: bool = False
    timestamps: bool = False
    tail_lines: int | None = None
    limit_bytes: int | None = None
    since_seconds: int | None = None
    since_time: datetime | None = None

    def since(self, now: float) -> float | None:
        """Unix seconds the log starts at (sinceSeconds counts back from `now`), None for all of it."""
        if self.since_seconds is not None:
            return now - self.since_seconds
        return self.since_time.timestamp() if self.since_time is not None else None


def _bool(query: Mapping[str, str], name: str) -> bool:
    value = query.get(name, "")
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(f'{name}: strconv.ParseBool: parsing "{value}": invalid syntax')


def _int(query: Mapping[str, str], name: str) -> int | None:
    value = query.get(name)
    if value in (None, ""):
        return None
    try:
        return int(value)
    except ValueError:
        raise ValueError(f'{name}: strconv.ParseInt: parsing "{value}": invalid syntax') from None


def parse(query: Mapping[str, str]) -> PodLogOptions:
    """The options as given; raises ValueError for a value that is not a boolean, integer or time."""
    stamp = query.get("sinceTime") or None
    try:
        since_time = parse_timestamp(stamp) if stamp else None
    except ValueError:
        raise ValueError(f'sinceTime: parsing time "{stamp}" as RFC 3339: cannot parse') from None
    return PodLogOptions(container=query.get("container", ""), follow=_bool(query, "follow"),
                         previous=_bool(query, "previous"), timestamps=_bool(query, "timestamps"),
                         tail_lines=_int(query, "tailLines"), limit_bytes=_int(query, "limitBytes"),
                         since_seconds=_int(query, "sinceSeconds"), since_time=since_time)


def validate(options: PodLogOptions) -> list[FieldError]:
    """Upstream ValidatePodLogOptions."""
    errors: list[FieldError] = []
    if options.tail_lines is not None and options.tail_lines < 0:
        errors.append(FieldError.invalid("tailLines", options.tail_lines, "must be greater than or equal to 0"))
    if options.limit_bytes is not None and options.limit_bytes < 1:
        errors.append(FieldError.invalid("limitBytes", options.limit_bytes, "must be greater than 0"))
    if options.since_seconds is not None and options.since_time is not None:
        errors.append(FieldError.forbidden("", "at most one of `sinceTime` or `sinceSeconds` may be specified"))
    elif options.since_seconds is not None and options.since_seconds < 1:
        errors.append(FieldError.invalid("sinceSeconds", options.since_seconds, "must be greater than 0"))
    return errors


def _names(containers: Any) -> list[str]:
    return [str(c.get("name")) for c in containers or [] if isinstance(c, Mapping) and c.get("name")]


def choose_container(pod: Mapping[str, Any], container: str) -> str:
    """The container whose log is asked for (upstream validateContainer): the named one if the pod has it,
    else the only app container; raises ValueError with upstream's message otherwise."""
    spec = pod.get("spec") or {}
    name = (pod.get("metadata") or {}).get("name", "")
    apps = _names(spec.get("containers"))
    every: Sequence[str] = _names(spec.get("initContainers")) + apps + _names(spec.get("ephemeralContainers"))
    if container:
        if container not in every:
            raise ValueError(f"container {container} is not valid for pod {name}")
        return container
    if len(apps) == 1:
        return apps[0]
    if not apps:
        raise ValueError(f"a container name must be specified for pod {name}")
    raise ValueError(f"a container name must be specified for pod {name}, choose one of: [{' '.join(every)}]")
