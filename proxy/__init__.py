"""slimkube's kube-proxy in iptables mode: services and endpoints rendered into KUBE-* chains.

A component (docs/architecture.md): it stands on the shared base only — control.client for its informers,
control.util for the iptables client and backend detection, the event-loop thread and component
config — and imports no other component; the composition root (slimkube/) starts it.
"""
