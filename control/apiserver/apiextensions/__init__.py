"""The apiextensions.k8s.io/v1 API itself, pure (upstream: k8s.io/apiextensions-apiserver/pkg/apis/
apiextensions/validation and pkg/apiserver/schema): below the registry, so the CRD kind's strategy
validates with it; the CRD package (control/apiserver/crd/) serves custom resources with it.

- `schema.py`: structural schemas — what a CRD's openAPIV3Schema may say, and validation, defaulting and
  pruning of custom objects by it.
- `cel.py`: `x-kubernetes-validations` rules evaluated with cel-python.
- `jsonpath.py`: the simple JSONPath of printer columns and scale paths.
- `definitions.py`: validation of the CRD object itself, naming (acceptedNames, the NamesAccepted and
  Established conditions) and the resources a definition serves.
"""
