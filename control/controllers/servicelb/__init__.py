"""The service load-balancer controller (k3s pkg/cloudprovider/servicelb)."""
