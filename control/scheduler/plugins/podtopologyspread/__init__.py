"""PodTopologySpread: spread a pod's group evenly over topology domains (zones, nodes, ...)."""

from control.scheduler.plugins.podtopologyspread.plugin import PodTopologySpread

__all__ = ["PodTopologySpread"]
