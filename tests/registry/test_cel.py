"""CEL over JSON: the expressions admission policies use, their results and their errors."""

from __future__ import annotations

from typing import Any

import pytest

from inplace.registry.cel import CompileError, EvaluationError, compile_expression, to_cel

DEPLOYMENT = {
    "metadata": {"name": "xapp", "labels": {"team": "a"}},
    "spec": {
        "replicas": 3,
        "template": {"spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}},
    },
}


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("object.spec.replicas <= 5", True),
        ("object.spec.replicas <= params.max", True),
        ("has(object.metadata.labels)", True),
        ("has(object.metadata.annotations)", False),
        ("object.metadata.name.startsWith('x')", True),
        ("'team' in object.metadata.labels", True),
        ("object.spec.template.spec.containers.all(c, c.image.contains(':'))", True),
        ("object.spec.template.spec.containers.map(c, c.name)", ["c"]),
        ("'at most ' + string(params.max) + ' replicas'", "at most 5 replicas"),
        ("size(object.metadata.name)", 4),
        ("object.metadata.name.matches('^[a-z]+$')", True),
        ("oldObject == null", True),
        ("request.operation == 'CREATE'", True),
    ],
)
def test_expressions(expression: str, expected: Any) -> None:
    variables = {
        "object": DEPLOYMENT,
        "oldObject": None,
        "params": {"max": 5},
        "request": {"operation": "CREATE"},
    }
    assert compile_expression(expression).evaluate(variables) == expected


def test_values_converted_once_give_the_same_results() -> None:
    converted = to_cel(DEPLOYMENT)
    program = compile_expression("object.spec.replicas * 2")
    assert program.evaluate({"object": converted}) == 6
    assert program.evaluate({"object": converted}) == 6


def test_errors() -> None:
    with pytest.raises(CompileError, match=r"^ERROR: <input>:1:22: Syntax error$"):
        compile_expression("object.spec.replicas <=")
    with pytest.raises(CompileError):
        compile_expression("object.?spec.orValue(1)")  # the optional syntax is not there
    with pytest.raises(EvaluationError, match=r"^no such key: replicas$"):
        compile_expression("object.spec.replicas > 1").evaluate({"object": {"spec": {}}})
    with pytest.raises(EvaluationError):
        compile_expression("1 / object.n").evaluate({"object": {"n": 0}})


def test_compiled_once() -> None:
    assert compile_expression("1 + 1") is compile_expression("1 + 1")
