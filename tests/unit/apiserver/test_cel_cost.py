"""The runtime cost budget of CRD validation rules (control/apiserver/apiextensions/celcost.py): a call past
its limit fails that rule with upstream's words, the object's rules together past the budget stop there,
and the meter is charged for every element a macro visits."""

from __future__ import annotations

import pytest

from control.apiserver.apiextensions import cel, celcost

NESTED = "self.xs.all(x, self.xs.all(y, x + y >= 0))"


def schema(*rules: str) -> dict:
    return {"type": "object", "properties": {"xs": {"type": "array", "items": {"type": "integer"}}},
            "x-kubernetes-validations": [{"rule": rule} for rule in rules]}


def test_a_call_over_its_limit_fails_the_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(celcost, "PER_CALL_LIMIT", 5_000)
    errors = cel.validate({"xs": list(range(100))}, cel._MISSING, schema(NESTED), "spec")
    assert [e.message for e in errors] == [
        f"spec: Invalid value: \"object\": 'operation cancelled: actual cost limit exceeded': call cost exceeds "
        f"limit for rule: {NESTED}"]
    assert cel.validate({"xs": list(range(5))}, cel._MISSING, schema(NESTED), "spec") == []  # cheap enough


def test_the_objects_budget_stops_further_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(celcost, "RUNTIME_BUDGET", 8_000)
    errors = cel.validate({"xs": list(range(60))}, cel._MISSING, schema(NESTED, NESTED, "false"), "spec")
    assert [e.detail for e in errors] == [
        "validation failed due to running out of cost budget, no further validation rules will be run"]


def test_macros_charge_per_element(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ten elements fit in a limit a hundred do not: the body is charged once per element."""
    monkeypatch.setattr(celcost, "PER_CALL_LIMIT", 500)
    rule = schema("self.xs.all(x, x >= 0)")
    assert cel.validate({"xs": list(range(10))}, cel._MISSING, rule, "spec") == []
    assert "call cost exceeds limit" in cel.validate({"xs": list(range(100))}, cel._MISSING, rule, "spec")[0].detail
