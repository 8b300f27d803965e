"""The configuration list written when the kubelet runs in CNI mode and its configuration directory has
none: Debian's containernetworking-plugins doing what the built-in network does.

- `bridge`: the node bridge (the built-in network's name, `cbr0`) as the pods' gateway (`isGateway`, the
  pod CIDR's first address), hairpin mode (a pod reaching itself through a Service), the MTU of the
  node's backend (VXLAN's uplink − 50), and `ipMasq` false: the kubelet's own `KUBE-POD-MASQ` chain
  already masquerades traffic leaving the cluster CIDR (nodeagent/network/rules.py), which the bridge
  plugin's rule would duplicate for pod → other nodes' pods too;
- `host-local` IPAM over the Node's `spec.podCIDR`, its store under the kubelet's state directory (not
  /var/lib/cni/networks: the nodes of `up --nodes` share one filesystem);
- `portmap` with the `portMappings` capability: the pod's hostPorts;
- `loopback`: `lo` up in the pod (it passes the previous result on).

The file is `10-slimkube.conflist`; while it is the first in the directory the kubelet keeps it current
(rewritten at start when the Node's pod CIDR or the MTU changed). An operator's own list that sorts first
(or the file's removal plus another one) takes over.
"""

from __future__ import annotations

import ipaddress
import json
import os
from pathlib import Path
from typing import Any

from nodeagent.network.cni.conf import candidates

NETWORK_NAME = "slimkube"
FILE_NAME = "10-slimkube.conflist"
CNI_VERSION = "1.0.0"


def default_conflist(*, pod_cidr: str, bridge: str, mtu: int, ipam_dir: str) -> dict[str, Any]:
    gateway = str(next(ipaddress.IPv4Network(pod_cidr).hosts()))
    return {
        "cniVersion": CNI_VERSION,
        "name": NETWORK_NAME,
        "plugins": [
            {"type": "bridge", "bridge": bridge, "isGateway": True, "ipMasq": False, "hairpinMode": True,
             "mtu": mtu,
             "ipam": {"type": "host-local", "ranges": [[{"subnet": pod_cidr, "gateway": gateway}]],
                      "routes": [{"dst": "0.0.0.0/0"}], "dataDir": ipam_dir}},
            {"type": "portmap", "capabilities": {"portMappings": True}},
            {"type": "loopback"},
        ],
    }


def ensure_default(conf_dir: str, *, pod_cidr: str, bridge: str, mtu: int, ipam_dir: str) -> Path | None:
    """Write the default list into `conf_dir` when no configuration is there, or when the one in use is
    our own (`FILE_NAME`) written for another pod CIDR, MTU or bridge; the path written, else None."""
    directory = Path(conf_dir)
    directory.mkdir(parents=True, exist_ok=True)
    found = candidates(os.listdir(directory))
    path = directory / FILE_NAME
    text = json.dumps(default_conflist(pod_cidr=pod_cidr, bridge=bridge, mtu=mtu, ipam_dir=ipam_dir), indent=2) + "\n"
    if found and (found[0] != FILE_NAME or path.read_text() == text):
        return None
    tmp = directory / f".{FILE_NAME}.tmp"  # a name no runtime reads: no half-written list is ever seen
    tmp.write_text(text)
    os.replace(tmp, path)
    return path
