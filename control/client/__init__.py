"""The client machinery every component uses (upstream k8s.io/client-go): a REST client on
`requests`, reflectors, thread-safe stores, shared informers, rate-limited workqueues, event recording and
leader election. Components talk to the API server only through this package.

Part of the shared base: it imports control.apimachinery and control.util, never a component.
"""
