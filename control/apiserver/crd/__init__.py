"""apiextensions.k8s.io/v1 CustomResourceDefinitions (upstream: k8s.io/apiextensions-apiserver).

- `schema.py`: structural schemas — what a CRD's openAPIV3Schema may say, and validation, defaulting and
  pruning of custom objects by it (pure).
- `cel.py`: `x-kubernetes-validations` rules evaluated with cel-python (pure).
- `jsonpath.py`: the simple JSONPath of printer columns and scale paths (pure).
- `definitions.py`: validation of the CRD object itself, naming (acceptedNames, the NamesAccepted and
  Established conditions) and the resources a definition serves (pure).
- `strategies.py`: the CRD's strategy and the strategy of custom objects of one version.
- `controller.py`: the API server's loop that installs and removes served resources as CRDs come, change
  and go, and deletes a deleted CRD's objects (upstream: the naming, establishing and finalizer controllers).
"""
