"""The set of node-sized subnets of the cluster CIDR: which are taken, which one comes next.

Upstream: pkg/controller/nodeipam/ipam/cidrset/cidr_set.go. The cluster CIDR is cut into subnets of
`node_mask_size` bits, numbered from the lowest address; `allocate_next` hands out the first free one at
or after the last one handed out (round robin, so a released subnet is not reused at once); `occupy`
marks every subnet a CIDR overlaps (a Node's podCIDR, or the whole service CIDR when it lies inside the
cluster CIDR), `release` frees them again. A CIDR overlapping no subnet is refused, as upstream's
"out the range" error. Upstream's limits carry over: at most 2^16 subnets (clusterSubnetMaxDiff), and
a node mask no shorter than the cluster's.

Departures: the set of taken indexes is a Python set instead of a big.Int bitmap; no metrics.
"""

from __future__ import annotations

import ipaddress

Network = ipaddress.IPv4Network | ipaddress.IPv6Network

CLUSTER_SUBNET_MAX_DIFF = 16  # upstream clusterSubnetMaxDiff: at most 2^16 node subnets


class CIDRSetError(ValueError):
    """A bad cluster CIDR / mask size, or a CIDR outside the set."""


class CIDRsExhausted(CIDRSetError):
    """Every subnet is taken (upstream ErrCIDRRangeNoCIDRsRemaining)."""


class CIDRSet:
    """Which node subnets of one cluster CIDR are taken (module notes). Not thread-safe: the controller
    serialises its calls."""

    def __init__(self, cluster_cidr: str, node_mask_size: int) -> None:
        try:
            self.cluster: Network = ipaddress.ip_network(cluster_cidr, strict=True)
        except ValueError as exc:
            raise CIDRSetError(f"cluster CIDR {cluster_cidr!r}: {exc}") from None
        if not self.cluster.prefixlen <= node_mask_size <= self.cluster.max_prefixlen:
            raise CIDRSetError(f"node CIDR mask size {node_mask_size} must be between the cluster CIDR's "
                               f"{self.cluster.prefixlen} and {self.cluster.max_prefixlen}")
        if node_mask_size - self.cluster.prefixlen > CLUSTER_SUBNET_MAX_DIFF:
            raise CIDRSetError("New CIDR set failed; the node CIDR size is too big")  # upstream's message
        self.node_mask_size = node_mask_size
        self.max_cidrs = 1 << (node_mask_size - self.cluster.prefixlen)
        self._shift = self.cluster.max_prefixlen - node_mask_size  # address bits inside one subnet
        self._base = int(self.cluster.network_address)
        self._used: set[int] = set()
        self._next = 0  # upstream nextCandidate

    @property
    def allocated(self) -> int:
        return len(self._used)

    def _subnet(self, index: int) -> Network:
        return ipaddress.ip_network((self._base + (index << self._shift), self.node_mask_size))

    def _indexes(self, cidr: str | Network) -> range:
        """The subnets `cidr` overlaps (upstream getBeginningAndEndIndices)."""
        try:
            network = ipaddress.ip_network(cidr, strict=False) if isinstance(cidr, str) else cidr
        except ValueError as exc:
            raise CIDRSetError(f"CIDR {cidr!r}: {exc}") from None
        if network.version != self.cluster.version or not (network.overlaps(self.cluster)):
            raise CIDRSetError(f"cidr {network} is out the range of cluster cidr {self.cluster}")
        if network.prefixlen <= self.cluster.prefixlen:  # covers the whole cluster CIDR
            return range(self.max_cidrs)
        first = (int(network.network_address) - self._base) >> self._shift
        last = (int(network.broadcast_address) - self._base) >> self._shift
        return range(first, last + 1)

    def allocate_next(self) -> Network:
        """The next free subnet, marked taken; CIDRsExhausted when there is none."""
        for step in range(self.max_cidrs):
            candidate = (self._next + step) % self.max_cidrs
            if candidate not in self._used:
                self._used.add(candidate)
                self._next = (candidate + 1) % self.max_cidrs
                return self._subnet(candidate)
        raise CIDRsExhausted("CIDR allocation failed; there are no remaining CIDRs left to allocate in the "
                             "accepted range")  # upstream ErrCIDRRangeNoCIDRsRemaining

    def occupy(self, cidr: str | Network) -> None:
        """Mark every subnet `cidr` overlaps taken."""
        self._used.update(self._indexes(cidr))

    def release(self, cidr: str | Network) -> None:
        """Mark every subnet `cidr` overlaps free."""
        self._used.difference_update(self._indexes(cidr))
