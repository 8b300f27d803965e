"""The kubelet's prober (upstream pkg/kubelet/prober and pkg/probe): liveness, readiness and startup probes."""
