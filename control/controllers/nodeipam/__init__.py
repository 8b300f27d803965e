"""Node IPAM: a pod CIDR for every Node (upstream pkg/controller/nodeipam)."""
