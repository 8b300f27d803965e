"""slimkube's control plane: API server, storage, scheduler, controllers, and the shared client machinery.

`control.apimachinery` and `control.client` are shared by every component (the kubelet and the proxy
import them too), as k8s.io/apimachinery and client-go are upstream.
"""
