"""The field manager of a write as upstream's handlers derive and check it (ValidatePatchOptions,
ValidateFieldManager, managerOrUserAgent)."""

from __future__ import annotations

import pytest

from control.apiserver.endpoints import request as req
from control.apiserver.status import APIError

KUBECTL = "kubectl/v1.33.1 (linux/amd64) kubernetes/8adc0f0"


def test_field_manager_comes_from_the_query_or_the_user_agent() -> None:
    assert req.field_manager({"fieldManager": "kubectl-edit"}, KUBECTL, "PatchOptions") == "kubectl-edit"
    assert req.field_manager({}, KUBECTL, "CreateOptions") == "kubectl"


@pytest.mark.parametrize(
    ("query", "options", "apply", "message"),
    [
        pytest.param({}, "PatchOptions", True,
                     'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply '
                     "patch", id="apply-needs-a-manager"),
        pytest.param({"fieldManager": "m", "force": "true"}, "PatchOptions", False,
                     'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for non-apply '
                     "patch", id="force-only-for-apply"),
        pytest.param({"fieldManager": "x" * 129}, "UpdateOptions", False,
                     'UpdateOptions.meta.k8s.io "" is invalid: fieldManager: Too long: may not be more than 128 bytes',
                     id="too-long"),
        pytest.param({"fieldManager": "a\x07"}, "CreateOptions", False,
                     'CreateOptions.meta.k8s.io "" is invalid: fieldManager: Invalid value: "a\\u0007": '
                     "invalid character U+0007 (at position 1)", id="unprintable"),
    ],
)
def test_refused_field_managers(query: dict[str, str], options: str, apply: bool, message: str) -> None:
    with pytest.raises(APIError) as refused:
        req.field_manager(query, KUBECTL, options, apply=apply)
    assert refused.value.code == 422
    assert refused.value.message == message


def test_apply_content_type_is_a_patch_type_read_as_yaml() -> None:
    assert req.PATCH_TYPES["application/apply-patch+yaml"] == "apply"
    assert req.decode_body(b"kind: ConfigMap\ndata:\n  a: '1'\n", "application/apply-patch+yaml") == {
        "kind": "ConfigMap", "data": {"a": "1"}}
