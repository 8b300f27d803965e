"""A kubelet's refusal of a pods/log request as the Status the API server answers (upstream
GenericHttpResponseChecker): kubectl prints the message, so it must be the kubelet's text."""

from __future__ import annotations

import pytest

from control.apiserver.endpoints.handlers import _kubelet_refusal


@pytest.mark.parametrize("code, text, reason, message", [
    pytest.param(400, 'previous terminated container "c" in pod "p" not found\n', "BadRequest",
                 'previous terminated container "c" in pod "p" not found', id="bad-request"),
    pytest.param(404, 'pod "p" does not exist\n', "NotFound", 'pod "p" does not exist', id="not-found"),
    pytest.param(404, "", "NotFound", 'pods "p" not found', id="not-found-no-text"),
    pytest.param(500, "docker down", "InternalError", "Internal error occurred: docker down", id="internal"),
    pytest.param(401, '{"kind":"Status"}', "", '{"kind":"Status"}', id="other"),
])
def test_refusal_keeps_the_kubelets_text(code: int, text: str, reason: str, message: str) -> None:
    error = _kubelet_refusal(code, text, "p")
    assert (error.code, error.reason, error.message) == (code, reason, message)
