"""Names and small formatting rules of kube-proxy's iptables chains, exactly as upstream spells them.

Follows kubernetes pkg/proxy/iptables/proxier.go (v1.29-1.30): the top-level chain names (the `kube*Chain`
constants), `portProtoHash` — the first 16 characters of base32(sha256(servicePortName + protocol)) with
the protocol lower-case — behind the per-service prefixes KUBE-SVC- (Cluster policy), KUBE-SVL- (Local
policy), KUBE-EXT- (external destinations) and KUBE-FW- (load-balancer firewall), and KUBE-SEP- which hashes
servicePortName + protocol + "IP:port". Because the names come from the service and endpoint alone, a
restarted proxy (or upstream's kube-proxy) finds the same chains and can replace them in place.

`probability` is upstream's `computeProbability` (`%0.10f` of 1/n), memoised as upstream precomputes it:
formatting a float is the single most repeated operation of a large render. For the same reason chain
names are memoised per (service port, endpoint): a sync after the first hashes only what is new, which is
most of what makes a partial sync of a large cluster cheap.
"""

from __future__ import annotations

import base64
import functools
import hashlib

from proxy.model import ServicePortName

# Top-level chains (upstream's constants); the proxy rewrites them whole on every sync.
SERVICES = "KUBE-SERVICES"
EXTERNAL_SERVICES = "KUBE-EXTERNAL-SERVICES"
NODEPORTS = "KUBE-NODEPORTS"
POSTROUTING = "KUBE-POSTROUTING"
MARK_MASQ = "KUBE-MARK-MASQ"
FORWARD = "KUBE-FORWARD"
PROXY_FIREWALL = "KUBE-PROXY-FIREWALL"
KUBELET_FIREWALL = "KUBE-FIREWALL"  # upstream's copy of the kubelet's localnet guard (localhostNodePorts)

FILTER_CHAINS = (SERVICES, EXTERNAL_SERVICES, FORWARD, NODEPORTS, PROXY_FIREWALL)
NAT_CHAINS = (SERVICES, NODEPORTS, POSTROUTING, MARK_MASQ)

SVC_PREFIX = "KUBE-SVC-"
SVL_PREFIX = "KUBE-SVL-"
EXT_PREFIX = "KUBE-EXT-"
FW_PREFIX = "KUBE-FW-"
SEP_PREFIX = "KUBE-SEP-"
# Per-service chains, ours to delete when no service needs them (upstream isServiceChainName); KUBE-XLB- is
# the pre-1.24 name of the Local-policy chain, so chains an older kube-proxy left behind are removed too.
SERVICE_CHAIN_PREFIXES = (SVC_PREFIX, SVL_PREFIX, EXT_PREFIX, FW_PREFIX, SEP_PREFIX, "KUBE-XLB-")


def _hash16(text: str) -> str:
    """The first 16 base32 characters of sha256(text): exactly the encoding of the digest's first 10 bytes
    (base32 turns every 5 bytes into 8 characters), which is a third of the work of encoding all 32."""
    return base64.b32encode(hashlib.sha256(text.encode()).digest()[:10]).decode()


@functools.lru_cache(maxsize=1 << 16)
def port_proto_hash(name: ServicePortName) -> str:
    """Upstream portProtoHash: `str(name)` (`ns/svc:port`) + the protocol in lower case."""
    return _hash16(str(name) + name.protocol.lower())


def service_chain_name(name: ServicePortName) -> str:
    """KUBE-SVC-…: the Cluster-policy chain that picks among all ready endpoints."""
    return SVC_PREFIX + port_proto_hash(name)


def local_chain_name(name: ServicePortName) -> str:
    """KUBE-SVL-…: the Local-policy chain that picks among this node's ready endpoints."""
    return SVL_PREFIX + port_proto_hash(name)


def external_chain_name(name: ServicePortName) -> str:
    """KUBE-EXT-…: where NodePort, externalIP and load-balancer traffic enters the service."""
    return EXT_PREFIX + port_proto_hash(name)


@functools.lru_cache(maxsize=1 << 17)
def endpoint_chain_name(name: ServicePortName, endpoint: str) -> str:
    """KUBE-SEP-…: one endpoint (`endpoint` is "IP:port") of one service port."""
    return SEP_PREFIX + _hash16(str(name) + name.protocol.lower() + endpoint)


def is_service_chain(chain: str) -> bool:
    return chain.startswith(SERVICE_CHAIN_PREFIXES)


@functools.lru_cache(maxsize=4096)
def probability(n: int) -> str:
    """`--probability` of the i-th of n remaining endpoints: 1/n printed with 10 decimals (1/3 → 0.3333333333)."""
    return "%0.10f" % (1.0 / n)


def masquerade_mark(bit: int) -> str:
    """The mark of masqueradeBit: bit 14 → 0x4000, the form `iptables-save` prints back (upstream formats
    it with `%#08x`, which the kernel stores as the same number)."""
    if not 0 <= bit <= 31:
        raise ValueError(f"masquerade bit {bit} is outside 0..31")
    return hex(1 << bit)
