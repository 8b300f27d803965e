"""The scheduler's configuration file: a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1), read
and checked before anything starts, so a mistake is reported with the field it is in and the server does
not start on settings the operator did not choose.

Upstream: pkg/scheduler/apis/config/v1 (the fields and their defaults: podInitialBackoffSeconds 1,
podMaxBackoffSeconds 10, percentageOfNodesToScore unset = adaptive, one profile "default-scheduler" when
none is given) and pkg/scheduler/apis/config/validation/validation.go (`ValidateKubeSchedulerConfiguration`:
percentageOfNodesToScore in [0, 100], podInitialBackoffSeconds > 0, podMaxBackoffSeconds ≥ it, every
profile a schedulerName, no name twice, a pluginConfig entry once per plugin; its messages are
field.Error's: `profiles[1].schedulerName: Duplicate value: "x"`). The scheduler's config is decoded
strictly upstream, so an unknown field is an error here too (control/util/componentconfig.py's rule).

What is honoured: `profiles` (control/scheduler/profile.py builds them: schedulerName,
percentageOfNodesToScore, plugins.{multiPoint,preFilter,filter,postFilter,preScore,score}, pluginConfig
with each plugin's own argument checks), the top-level `percentageOfNodesToScore`,
`podInitialBackoffSeconds`, `podMaxBackoffSeconds`. Accepted and ignored: `parallelism`, `leaderElection`
and `clientConnection` (the scheduler runs in the server's process with its connection; the server's
`--leader-elect*` flags decide election), `enableProfiling`, `enableContentionProfiling`,
`delayCacheUntilActive`. Refused: `extenders` (none can be called here) and plugins at the points this
scheduler has built in (queueSort is PrioritySort, bind is DefaultBinder; naming exactly those is
accepted; preEnqueue, reserve, permit, preBind, postBind have no plugins here).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from control.scheduler.plugins.registry import REGISTRY
from control.scheduler.profile import DEFAULT_SCHEDULER_NAME, build_profile
from control.scheduler.queue import INITIAL_BACKOFF_SECONDS, MAX_BACKOFF_SECONDS
from control.util.componentconfig import ConfigError, read_document

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"

_HONOURED = ("percentageOfNodesToScore", "podInitialBackoffSeconds", "podMaxBackoffSeconds", "profiles")
_IGNORED = ("parallelism", "leaderElection", "clientConnection", "enableProfiling", "enableContentionProfiling",
            "delayCacheUntilActive")
_TOP_LEVEL = frozenset({"apiVersion", "kind", "extenders", *_HONOURED, *_IGNORED})
_PROFILE_FIELDS = frozenset({"schedulerName", "percentageOfNodesToScore", "plugins", "pluginConfig"})
_POINTS = ("multiPoint", "preFilter", "filter", "postFilter", "preScore", "score")
# The points whose plugin is built in ("": none here) → the one plugin they may name.
_BUILT_IN_POINTS = {"queueSort": "PrioritySort", "bind": "DefaultBinder", "preEnqueue": "", "reserve": "",
                    "permit": "", "preBind": "", "postBind": ""}
_PLUGIN_SET_FIELDS = frozenset({"enabled", "disabled"})
_PLUGIN_FIELDS = frozenset({"name", "weight"})
_PLUGIN_CONFIG_FIELDS = frozenset({"name", "args"})


def load(path: str) -> dict[str, Any]:
    """The checked configuration in `path` (what `Scheduler(config=...)` takes); ConfigError otherwise."""
    try:
        return validate(read_document(path))
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None


def validate(document: Mapping[str, Any]) -> dict[str, Any]:
    """The document, checked (module notes), with its defaults filled in; ConfigError naming the field."""
    if document.get("apiVersion") != API_VERSION:
        raise ConfigError(f"apiVersion: Unsupported value: {document.get('apiVersion')!r}: supported values: "
                          f"\"{API_VERSION}\"")
    if document.get("kind") != KIND:
        raise ConfigError(f"kind: Unsupported value: {document.get('kind')!r}: supported values: \"{KIND}\"")
    _known_fields("", document, _TOP_LEVEL)
    if document.get("extenders"):
        raise ConfigError("extenders: Forbidden: scheduler extenders are not supported")
    percentage = _percentage("percentageOfNodesToScore", document.get("percentageOfNodesToScore"))
    initial = _integer("podInitialBackoffSeconds", document.get("podInitialBackoffSeconds", INITIAL_BACKOFF_SECONDS))
    if initial <= 0:
        raise ConfigError(f"podInitialBackoffSeconds: Invalid value: {initial}: must be greater than 0")
    maximum = _integer("podMaxBackoffSeconds", document.get("podMaxBackoffSeconds", MAX_BACKOFF_SECONDS))
    if maximum < initial:
        raise ConfigError(f"podMaxBackoffSeconds: Invalid value: {maximum}: must be greater than or equal to "
                          "PodInitialBackoffSeconds")
    profiles = document.get("profiles") or [{"schedulerName": DEFAULT_SCHEDULER_NAME}]
    if not isinstance(profiles, list):
        raise ConfigError("profiles: Invalid value: expected a list")
    names: set[str] = set()
    for index, profile in enumerate(profiles):
        name = _profile(f"profiles[{index}]", profile, percentage)
        if name in names:
            raise ConfigError(f"profiles[{index}].schedulerName: Duplicate value: {name!r}")
        names.add(name)
    return {**document, "percentageOfNodesToScore": percentage, "podInitialBackoffSeconds": initial,
            "podMaxBackoffSeconds": maximum, "profiles": profiles}


def _known_fields(where: str, value: Any, known: frozenset[str]) -> None:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where or 'the document'}: Invalid value: expected a mapping of fields")
    for name in value:
        if name not in known:
            raise ConfigError(f"{where + '.' if where else ''}{name}: unknown field (known: "
                              f"{', '.join(sorted(known))})")


def _integer(where: str, value: Any) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{where}: Invalid value: {value!r}: expected an integer")
    return value


def _percentage(where: str, value: Any) -> int | None:
    if value is None:
        return None
    number = _integer(where, value)
    if not 0 <= number <= 100:
        raise ConfigError(f"{where}: Invalid value: {number}: not in valid range [0-100]")
    return number


def _profile(where: str, profile: Any, percentage_default: int | None) -> str:
    """Check one profile, building it as the scheduler will; its schedulerName."""
    _known_fields(where, profile, _PROFILE_FIELDS)
    name = profile.get("schedulerName")
    if not name or not isinstance(name, str):
        raise ConfigError(f"{where}.schedulerName: Required value")
    _percentage(f"{where}.percentageOfNodesToScore", profile.get("percentageOfNodesToScore"))
    plugins = profile.get("plugins") or {}
    _known_fields(f"{where}.plugins", plugins, frozenset({*_POINTS, *_BUILT_IN_POINTS}))
    for point, plugin_set in plugins.items():
        _plugin_set(f"{where}.plugins.{point}", plugin_set, _BUILT_IN_POINTS.get(point))
    seen: set[str] = set()
    for index, entry in enumerate(profile.get("pluginConfig") or []):
        at = f"{where}.pluginConfig[{index}]"
        _known_fields(at, entry, _PLUGIN_CONFIG_FIELDS)
        plugin = entry.get("name")
        if plugin in seen:
            raise ConfigError(f"{at}.name: Duplicate value: {plugin!r}")
        seen.add(plugin)
        factory = REGISTRY.get(plugin)
        if factory is None:
            raise ConfigError(f"{at}.name: Invalid value: {plugin!r}: no such plugin (known: "
                              f"{', '.join(sorted(REGISTRY))})")
        args = entry.get("args") or {}
        if not isinstance(args, Mapping):
            raise ConfigError(f"{at}.args: Invalid value: expected a mapping")
        try:
            factory(args)
        except (ValueError, TypeError, KeyError) as exc:
            raise ConfigError(f"{at}.args.{exc}") from None
    try:
        build_profile(profile, percentage_default=percentage_default)
    except (ValueError, TypeError, KeyError) as exc:
        raise ConfigError(f"{where}: {exc}") from None
    return name


def _plugin_set(where: str, plugin_set: Any, built_in: str | None) -> None:
    """`enabled`/`disabled` lists of {name, weight}; at a built-in point (`built_in` is then its one
    plugin, "" for none) only that plugin may be enabled."""
    _known_fields(where, plugin_set or {}, _PLUGIN_SET_FIELDS)
    for kind in ("enabled", "disabled"):
        entries = (plugin_set or {}).get(kind) or []
        if not isinstance(entries, list):
            raise ConfigError(f"{where}.{kind}: Invalid value: expected a list")
        for index, entry in enumerate(entries):
            at = f"{where}.{kind}[{index}]"
            _known_fields(at, entry, _PLUGIN_FIELDS)
            if not entry.get("name") or not isinstance(entry["name"], str):
                raise ConfigError(f"{at}.name: Required value")
            if "weight" in entry and _integer(f"{at}.weight", entry["weight"]) < 0:
                raise ConfigError(f"{at}.weight: Invalid value: {entry['weight']}: must not be negative")
            if kind == "enabled" and built_in is not None and entry["name"] != built_in:
                raise ConfigError(f"{at}.name: Unsupported value: {entry['name']!r}: " + (
                    f"this point runs only {built_in}" if built_in else "no plugins run at this point here"))
