"""Upstream's plugin names → constructors (pkg/scheduler/framework/plugins/registry.go), and the default
plugin set with its score weights (pkg/scheduler/apis/config/v1/default_plugins.go `getDefaultPlugins`:
multiPoint, in its order; TaintToleration 3, NodeAffinity 2, PodTopologySpread 2, InterPodAffinity 2, the
others 1). SelectorSpread is registered but not a default (upstream dropped it from the defaults in 1.23, the
PodTopologySpread system defaults do its work); a profile can enable it.

Not here yet (the profile builder names them as unknown): PrioritySort (the queue's order is built in),
DefaultBinder (the loop binds), NodeVolumeLimits and VolumeZone (no attachable or zonal volumes).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from control.scheduler.plugins.basic import NodeName, NodePorts, NodeUnschedulable
from control.scheduler.plugins.defaultpreemption import DefaultPreemption
from control.scheduler.plugins.imagelocality import ImageLocality
from control.scheduler.plugins.interpodaffinity import InterPodAffinity
from control.scheduler.plugins.nodeaffinity import NodeAffinity
from control.scheduler.plugins.noderesources import BalancedAllocation, Fit
from control.scheduler.plugins.podtopologyspread import PodTopologySpread
from control.scheduler.plugins.selectorspread import SelectorSpread
from control.scheduler.plugins.tainttoleration import TaintToleration
from control.scheduler.plugins.volumebinding import VolumeBinding
from control.scheduler.plugins.volumerestrictions import VolumeRestrictions

Factory = Callable[[Mapping[str, Any]], object]

REGISTRY: Mapping[str, Factory] = {
    "NodeUnschedulable": lambda args: NodeUnschedulable(),
    "NodeName": lambda args: NodeName(),
    "TaintToleration": lambda args: TaintToleration(),
    "NodeAffinity": lambda args: NodeAffinity(),
    "NodePorts": lambda args: NodePorts(),
    "NodeResourcesFit": Fit,
    "NodeResourcesBalancedAllocation": BalancedAllocation,
    "ImageLocality": lambda args: ImageLocality(),
    "VolumeRestrictions": lambda args: VolumeRestrictions(),
    "VolumeBinding": lambda args: VolumeBinding(),
    "InterPodAffinity": InterPodAffinity,
    "PodTopologySpread": PodTopologySpread,
    "SelectorSpread": lambda args: SelectorSpread(),
    "DefaultPreemption": DefaultPreemption,
}

DEFAULT_PLUGINS: tuple[tuple[str, int], ...] = (
    ("NodeUnschedulable", 0),
    ("NodeName", 0),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", 0),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", 0),
    ("VolumeBinding", 0),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DefaultPreemption", 0),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
)
