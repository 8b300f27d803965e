"""Control loops run by the controller manager (manager.py), one module per controller, each built on the
controller base (base.py: handlers enqueue keys, `sync(key)` retried with backoff, one cache-sync wait,
workers, an event recorder) and, for the replica controllers, expectations (expectations.py).

A component: it stands on the shared base (control.client, control.apimachinery, control.util) and talks
to the API server only through control.client; unit tests run it against tests/support/fake_apiserver.py."""
