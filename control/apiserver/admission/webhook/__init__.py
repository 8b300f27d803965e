"""Admission webhooks: Mutating- and ValidatingWebhookConfigurations called over HTTPS with AdmissionReview v1
(upstream: k8s.io/apiserver/pkg/admission/plugin/webhook/). `matching.py` decides which webhooks a request
goes to (pure), `celexpr.py` evaluates matchConditions, `review.py` builds the AdmissionReview and reads its
answer (pure), `client.py` does the I/O, `dispatch.py` is the two admission plugins. See docs/admission.md.
"""
