"""slimkube's kubelet: turns pods bound to this node into real Docker containers and reports their status."""
