"""A runtime cost budget for CEL rules on cel-python, which has none of its own (upstream:
k8s.io/apiserver/pkg/apis/cel/config.go `PerCallLimit` 1,000,000 and `RuntimeCELCostBudget` 10,000,000,
charged by cel-go's interpreter as it evaluates; apiextensions-apiserver's validation.go turns running
out into the rule's error).

Every node the interpreter evaluates costs one unit, macros' bodies once per element (cel-go charges per
operation, a string or list operation by its size: the units differ, the bounds are upstream's numbers).
One `Meter` is opened per object validated (`metering()`); each rule's call may use at most PER_CALL_LIMIT
units, and all of the object's rules together RUNTIME_BUDGET; past either, evaluation stops with
`CostExceeded`. A rule evaluated with no meter open (compilation checks) is not bounded.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import celpy
import lark
from celpy.evaluation import Evaluator

PER_CALL_LIMIT = 1_000_000
RUNTIME_BUDGET = 10_000_000


class CostExceeded(Exception):
    """The rule's call, or the object's rules together, ran past their budget."""

    def __init__(self, *, per_call: bool) -> None:
        super().__init__("operation cancelled: actual cost limit exceeded" if per_call else
                         "validation failed due to running out of cost budget, no further validation rules will be run")
        self.per_call = per_call


class Meter:
    """What is left of one object's budget, and what the current call has used."""

    def __init__(self) -> None:
        self.remaining = RUNTIME_BUDGET
        self.per_call = PER_CALL_LIMIT
        self.call = 0

    def charge(self) -> None:
        self.call += 1
        self.remaining -= 1
        if self.remaining < 0:
            raise CostExceeded(per_call=False)
        if self.call > self.per_call:
            raise CostExceeded(per_call=True)


_meter: ContextVar[Meter | None] = ContextVar("cel_meter", default=None)


@contextmanager
def metering() -> Iterator[Meter]:
    """Bound the rules evaluated inside by one meter (one object's validation)."""
    meter = Meter()
    token = _meter.set(meter)
    try:
        yield meter
    finally:
        _meter.reset(token)


class _MeteredEvaluator(Evaluator):
    def __init__(self, ast: lark.Tree[Any], activation: Any, meter: Meter) -> None:
        super().__init__(ast, activation=activation)
        self._meter = meter

    def _visit_tree(self, tree: lark.Tree[Any]) -> Any:
        self._meter.charge()
        return super()._visit_tree(tree)

    def sub_evaluator(self, ast: lark.Tree[Any]) -> Evaluator:
        return _MeteredEvaluator(ast, self.activation, self._meter)


class MeteredRunner(celpy.InterpretedRunner):
    """cel-python's interpreter, charging the open meter (if any) for every node it evaluates; each
    evaluation is one call."""

    def evaluate(self, context: Any) -> Any:
        meter = _meter.get()
        if meter is None:
            return super().evaluate(context)
        meter.call = 0
        return _MeteredEvaluator(self.ast, self.new_activation(), meter).evaluate(context)
