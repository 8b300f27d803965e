"""slimkube's control plane and the shared base every component stands on.

Layers, one direction (checked by the import contracts in pyproject.toml):
- shared base: `control.apimachinery` (selectors, quantities, metadata), `control.api` (per-kind
  defaults, validation, quota counting), `control.client` (REST client, informers, work queue, events,
  leader election) and `control.util` (iptables client, clock, event-loop thread, component config);
  like k8s.io/apimachinery, client-go and component-base upstream, the kubelet and the proxy use them too;
- components, none importing another: the API server (`control.apiserver` on `control.storage`), the
  controller manager (`control.controllers`), later the scheduler; the kubelet (`nodeagent`) and the
  kube-proxy (`proxy`) are components too;
- the composition root (`slimkube`) builds and starts them.
"""
