"""slimkube's kube-proxy in iptables mode: services and endpoints rendered into KUBE-* chains."""
