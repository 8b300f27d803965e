"""Which pod CIDR this node uses: the Node's `spec.podCIDR`, given by the controller manager's node IPAM
controller (control/controllers/nodeipam/), or `--pod-cidr` / the config's podCIDR as an override that
must agree with the Node.

Upstream: pkg/kubelet/kubelet_network.go (`updatePodCIDR`: the kubelet takes the Node's podCIDR when it
appears) and pkg/kubelet/kubelet_node_status.go (a kubelet's --pod-cidr is written on the Node it
registers). Departure: upstream's kubelet starts without a pod CIDR and only its network plugin waits;
here the pod bridge is made at start-up from the CIDR, so the kubelet waits for it (logging why) before it
builds the pod network, and gives up with a clear error after `timeout` seconds (a supervisor such as
systemd restarts it). A configured CIDR that differs from the Node's is refused: two nodes would hand
out the same pod addresses otherwise.
"""

from __future__ import annotations

import ipaddress
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

log = logging.getLogger(__name__)

WAIT_SECONDS = 300.0  # how long the kubelet waits for the node IPAM controller
POLL_SECONDS = 0.5
LOG_EVERY_SECONDS = 30.0


class PodCIDRError(RuntimeError):
    """No pod CIDR in time, or a configured one that differs from the Node's."""


def node_pod_cidr(node: Mapping[str, Any]) -> str:
    return str((node.get("spec") or {}).get("podCIDR") or "")


def choose(configured: str, assigned: str, *, node_name: str) -> str:
    """The CIDR to use given the config's and the Node's ("" when unset); "" while neither is known."""
    if configured and assigned and ipaddress.ip_network(configured) != ipaddress.ip_network(assigned):
        raise PodCIDRError(f"--pod-cidr {configured} does not match node {node_name}'s spec.podCIDR {assigned}: "
                           "drop the flag (the Node's is used) or give the Node's")
    return assigned or configured


def wait_for_pod_cidr(get_node: Callable[[], Mapping[str, Any]], node: Mapping[str, Any], *, configured: str,
                      node_name: str, stop: threading.Event | None = None, timeout: float = WAIT_SECONDS,
                      poll: float = POLL_SECONDS, monotonic: Callable[[], float] = time.monotonic) -> str:
    """The pod CIDR (see `choose`), re-reading the Node until it has one; PodCIDRError after `timeout`."""
    started = monotonic()
    last_word: float | None = None
    while not (cidr := choose(configured, node_pod_cidr(node), node_name=node_name)):
        now = monotonic()
        if last_word is None or now - last_word >= LOG_EVERY_SECONDS:
            last_word = now
            log.info("waiting for node %s to get a spec.podCIDR from the controller manager's node IPAM "
                     "(nodeipam controller; or give --pod-cidr) before setting up the pod network", node_name)
        if now - started >= timeout or (stop is not None and stop.is_set()):
            raise PodCIDRError(f"node {node_name} got no spec.podCIDR in {now - started:.0f} s: is the controller "
                               "manager's nodeipam controller running (not --disable'd), with free CIDRs "
                               "(`kubectl describe node` shows CIDRNotAvailable otherwise)? Or give --pod-cidr")
        (stop or threading.Event()).wait(poll)
        node = get_node()
    return cidr
