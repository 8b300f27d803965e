"""A scheduling profile: which plugin runs at which extension point, with which score weight, built from a
KubeSchedulerConfiguration-shaped dict (kubescheduler.config.k8s.io/v1 field names).

Upstream: pkg/scheduler/apis/config/v1/default_plugins.go (`mergePlugins`: the defaults are multiPoint;
a point's `disabled` removes plugins by name, `"*"` all defaults; `enabled` appends, or replaces a default
of the same name in its place, e.g. to change a weight), pkg/scheduler/profile/profile.go (one framework
per `schedulerName`) and schedule_one.go `numFeasibleNodesToFind` (percentageOfNodesToScore: the
profile's, else the top-level one, else adaptive: 50% less 1% per 125 nodes, at least 5%; clusters under
100 nodes are always searched whole and at least 100 nodes are found).

What is read: `percentageOfNodesToScore`, `profiles[].schedulerName`, `profiles[].percentageOfNodesToScore`,
`profiles[].plugins.{multiPoint,preFilter,filter,postFilter,preScore,score}.{enabled,disabled}` (with `weight`),
`profiles[].pluginConfig[].{name,args}`. Other fields are ignored.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from control.scheduler.framework import FilterPlugin, PostFilterPlugin, PreFilterPlugin, PreScorePlugin, ScorePlugin
from control.scheduler.plugins.registry import DEFAULT_PLUGINS, REGISTRY, Factory

DEFAULT_SCHEDULER_NAME = "default-scheduler"
MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
_POINTS: Mapping[str, type] = {"preFilter": PreFilterPlugin, "filter": FilterPlugin, "postFilter": PostFilterPlugin,
                               "preScore": PreScorePlugin, "score": ScorePlugin}


@dataclass(frozen=True)
class Profile:
    scheduler_name: str
    pre_filter: tuple[PreFilterPlugin, ...]
    filter: tuple[FilterPlugin, ...]
    post_filter: tuple[PostFilterPlugin, ...]
    pre_score: tuple[PreScorePlugin, ...]
    score: tuple[tuple[ScorePlugin, int], ...]  # (plugin, weight)
    percentage_of_nodes_to_score: int | None = None


def num_feasible_nodes_to_find(percentage: int | None, all_nodes: int) -> int:
    """How many feasible nodes the filter phase looks for before it stops (module notes)."""
    if all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return all_nodes
    if not percentage:
        percentage = max(50 - all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    return max(all_nodes * percentage // 100, MIN_FEASIBLE_NODES_TO_FIND)


def _merge(current: list[tuple[str, int]], point: Mapping[str, Any] | None) -> list[tuple[str, int]]:
    point = point or {}
    disabled = {entry["name"] for entry in point.get("disabled") or []}
    merged = [] if "*" in disabled else [(name, weight) for name, weight in current if name not in disabled]
    for entry in point.get("enabled") or []:
        name, weight = entry["name"], int(entry.get("weight") or 0)
        at = next((i for i, (existing, _) in enumerate(merged) if existing == name), None)
        if at is None:
            merged.append((name, weight))
        else:
            merged[at] = (name, weight or merged[at][1])
    return merged


def build_profile(config: Mapping[str, Any], *, percentage_default: int | None = None,
                  registry: Mapping[str, Factory] = REGISTRY,
                  defaults: tuple[tuple[str, int], ...] = DEFAULT_PLUGINS) -> Profile:
    """One `profiles[]` entry as a Profile; ValueError for a plugin nothing here implements."""
    plugins_config = config.get("plugins") or {}
    args = {entry["name"]: entry.get("args") or {} for entry in config.get("pluginConfig") or []}
    multi_point = _merge(list(defaults), plugins_config.get("multiPoint"))
    instances: dict[str, object] = {}

    def instance(name: str) -> object:
        if name not in instances:
            factory: Callable[[Mapping[str, Any]], object] | None = registry.get(name)
            if factory is None:
                raise ValueError(f"plugin {name!r} is not implemented (known: {', '.join(sorted(registry))})")
            instances[name] = factory(args.get(name, {}))
        return instances[name]

    points: dict[str, list[tuple[Any, int]]] = {}
    for point, protocol in _POINTS.items():
        from_multi = [(name, weight) for name, weight in multi_point if isinstance(instance(name), protocol)]
        merged = _merge(from_multi, plugins_config.get(point))
        points[point] = [(instance(name), weight or 1) for name, weight in merged]
        for plugin, _ in points[point]:
            if not isinstance(plugin, protocol):
                raise ValueError(f"plugin {plugin.name!r} does not implement {point}")
    percentage = config.get("percentageOfNodesToScore", percentage_default)
    return Profile(
        scheduler_name=config.get("schedulerName") or DEFAULT_SCHEDULER_NAME,
        pre_filter=tuple(plugin for plugin, _ in points["preFilter"]),
        filter=tuple(plugin for plugin, _ in points["filter"]),
        post_filter=tuple(plugin for plugin, _ in points["postFilter"]),
        pre_score=tuple(plugin for plugin, _ in points["preScore"]),
        score=tuple((plugin, weight) for plugin, weight in points["score"]),
        percentage_of_nodes_to_score=percentage)


def build_profiles(config: Mapping[str, Any] | None = None) -> dict[str, Profile]:
    """Every profile of a KubeSchedulerConfiguration by schedulerName (the default one if none is given)."""
    config = config or {}
    percentage = config.get("percentageOfNodesToScore")
    profiles = [build_profile(entry, percentage_default=percentage)
                for entry in config.get("profiles") or [{}]]
    by_name = {profile.scheduler_name: profile for profile in profiles}
    if len(by_name) != len(profiles):
        raise ValueError("profiles: duplicate schedulerName")
    return by_name
