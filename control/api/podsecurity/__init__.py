"""The Pod Security Standards (upstream k8s.io/pod-security-admission: api/ and policy/): the checks of the
`baseline` and `restricted` levels per version (checks.py) and the policy a namespace's labels select, with
the evaluator that runs a level's checks (policy.py). Pure: the admission plugin that reads namespaces and
answers requests is control/apiserver/admission/podsecurity.py.
"""
