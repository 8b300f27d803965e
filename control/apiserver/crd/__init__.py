"""Custom resources served for apiextensions.k8s.io/v1 CustomResourceDefinitions (upstream:
k8s.io/apiextensions-apiserver/pkg/registry/customresource and pkg/controller), above the registry: the
store knows no custom resource, the controller installs them into the server's registry. The CRD API's
own rules (schemas, CEL, naming) are in control/apiserver/apiextensions/.

- `strategies.py`: the strategy of custom objects of one version; the only module that knows its class —
  everything else asks through the `Strategy` methods (list kind, printer columns, scale).
- `controller.py`: the API server's loop that installs and removes served resources as CRDs come, change
  and go, and deletes a deleted CRD's objects (upstream: the naming, establishing and finalizer controllers).
"""
