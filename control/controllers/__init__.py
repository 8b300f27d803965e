"""Control loops run by the controller manager (manager.py), one package per controller (`replicaset/`,
`deployment/`, `job/`, …: the controller, its pure decisions, its status), each built on what the
controllers share (`shared/`: the controller base with handlers that enqueue keys, `sync(key)` retried with
backoff, one cache-sync wait, workers and an event recorder; expectations, claiming and one pod control
for the replica controllers; ControllerRevisions; discovery; the condition/hash/finalizer helpers). A
controller package imports `shared/`, never another controller's package (an import-linter contract).

A component: it stands on the shared base (control.client, control.apimachinery, control.util) and talks
to the API server only through control.client; unit tests run it against tests/support/fake_apiserver.py."""
