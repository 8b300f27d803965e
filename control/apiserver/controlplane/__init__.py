"""What the API server keeps in place while it runs: bootstrap objects, APIServices, the `kubernetes` endpoints
(upstream: pkg/controlplane).
"""
