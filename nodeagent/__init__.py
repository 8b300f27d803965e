"""slimkube's kubelet: turns pods bound to this node into real Docker containers and reports their status.

A component (docs/architecture.md): it stands on the shared base only — control.client to talk to the API
server, control.api for static pods' defaults and validation and the QoS class, control.apimachinery,
control.util (iptables client, event-loop thread, component config) — and imports no other component;
the composition root (slimkube/) builds it. Inside, parts.py constructs and wires every collaborator once
and kubelet.py runs them.
"""
