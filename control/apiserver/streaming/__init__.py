"""exec/attach/port-forward relayed to the kubelet over WebSocket and SPDY (upstream:
k8s.io/apimachinery/pkg/util/proxy, httpstream).
"""
