"""ImageLocality: prefer nodes that already have the pod's images, by their size, scaled by how many nodes
have them (an image on every node says nothing about where to go).

Upstream: pkg/scheduler/framework/plugins/imagelocality/image_locality.go (sum over containers and init
containers of size · nodesWithImage / allNodes, clamped to [23 MiB, 1000 MiB · containers] and mapped to
0-100; an image named without a tag is `:latest`). Formerly ImageLocalityPriority.
"""

from __future__ import annotations

from control.scheduler.framework import MAX_NODE_SCORE, CycleState, Pod
from control.scheduler.nodeinfo import NodeInfo

MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB


def normalized_image_name(name: str) -> str:
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


def calculate_priority(sum_scores: int, containers: int) -> int:
    max_threshold = MAX_CONTAINER_THRESHOLD * containers
    clamped = min(max(sum_scores, MIN_THRESHOLD), max_threshold)
    return MAX_NODE_SCORE * (clamped - MIN_THRESHOLD) // (max_threshold - MIN_THRESHOLD)


class ImageLocality:
    name = "ImageLocality"

    def score(self, state: CycleState, pod: Pod, node: NodeInfo) -> int:
        spec = pod.get("spec") or {}
        containers = list(spec.get("initContainers") or []) + list(spec.get("containers") or [])
        total_nodes = len(state.snapshot.node_list) or 1
        total = 0
        for container in containers:
            image = node.image_states.get(normalized_image_name(container.get("image", "")))
            if image is not None:
                total += int(image.size * (image.num_nodes / total_nodes))
        return calculate_priority(total, len(containers))

    def normalize_scores(self, state: CycleState, pod: Pod, scores: dict[str, int]) -> None:
        return None
