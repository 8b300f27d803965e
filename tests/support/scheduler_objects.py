"""Small builders of the Node and Pod dicts the scheduler's tests need (upstream's st.MakePod/MakeNode)."""

from __future__ import annotations

from typing import Any


def make_node(name: str, *, cpu: str = "4", memory: str = "32Gi", pods: int = 110, labels: dict | None = None,
              taints: list | None = None, unschedulable: bool = False, images: list | None = None,
              extra: dict | None = None) -> dict[str, Any]:
    allocatable = {"cpu": cpu, "memory": memory, "pods": str(pods), **(extra or {})}
    node: dict[str, Any] = {"apiVersion": "v1", "kind": "Node",
                            "metadata": {"name": name, "labels": labels or {}},
                            "spec": {}, "status": {"allocatable": allocatable, "capacity": allocatable}}
    if taints:
        node["spec"]["taints"] = taints
    if unschedulable:
        node["spec"]["unschedulable"] = True
    if images:
        node["status"]["images"] = images
    return node


def make_pod(name: str, *, namespace: str = "default", requests: list[dict] | None = None,
             init_requests: list[dict] | None = None, node_name: str = "", ports: list[int] | None = None,
             node_selector: dict | None = None, affinity: dict | None = None, tolerations: list | None = None,
             images: list[str] | None = None, priority: int | None = None, scheduler_name: str | None = None,
             overhead: dict | None = None, labels: dict | None = None,
             volumes: list | None = None) -> dict[str, Any]:
    containers = [{"name": f"c{i}", "image": (images or [])[i] if i < len(images or []) else "busybox",
                   "resources": {"requests": req} if req else {}}
                  for i, req in enumerate(requests or [{}])]
    if ports:
        containers[0]["ports"] = [{"containerPort": p, "hostPort": p} for p in ports]
    spec: dict[str, Any] = {"containers": containers}
    if init_requests:
        spec["initContainers"] = [{"name": f"i{i}", "image": "busybox", "resources": {"requests": req}}
                                  for i, req in enumerate(init_requests)]
    for key, value in (("nodeName", node_name), ("nodeSelector", node_selector), ("affinity", affinity),
                       ("tolerations", tolerations), ("priority", priority), ("schedulerName", scheduler_name),
                       ("overhead", overhead), ("volumes", volumes)):
        if value is not None and value != "":
            spec[key] = value
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"uid-{name}"}
    if labels:
        metadata["labels"] = labels
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": {"phase": "Pending"}}
