"""CEL (the Common Expression Language) over JSON objects, for admission policies and
validation rules.

A thin layer over ``cel-python`` (``celpy``): an expression is compiled once (cached by its
text) and evaluated against JSON values; results come back as plain Python values. Errors
carry upstream-like words: a compile error names the line and column
(``ERROR: <input>:1:22: Syntax error``), an evaluation error the reason (``no such key:
replicas``). What ``cel-python`` does not implement is not offered either: the optional
syntax (``object.?spec``) is a syntax error, and Kubernetes' own CEL libraries (``quantity()``,
``url()``, ``authorizer``) are not there.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

import celpy
from celpy import celtypes
from celpy.adapter import json_to_cel
from celpy.celparser import CELParseError
from celpy.evaluation import CELEvalError

__all__ = ["CompileError", "EvaluationError", "Program", "compile_expression", "to_cel"]


class CompileError(Exception):
    """An expression that does not parse."""


class EvaluationError(Exception):
    """An expression that failed on the values it was given (a missing field, a bad type)."""


_ENVIRONMENT = celpy.Environment()
_MISSING_MEMBER = re.compile(r"no such member in mapping: '([^']*)'")


def _to_python(value: Any) -> Any:
    if isinstance(value, celtypes.BoolType):
        return bool(value)
    if isinstance(value, (celtypes.IntType, celtypes.UintType)):
        return int(value)
    if isinstance(value, celtypes.DoubleType):
        return float(value)
    if isinstance(value, celtypes.StringType):
        return str(value)
    if isinstance(value, celtypes.MapType):
        return {str(_to_python(k)): _to_python(v) for k, v in value.items()}
    if isinstance(value, celtypes.ListType):
        return [_to_python(v) for v in value]
    if value is None or isinstance(value, celtypes.NullType):
        return None
    return value


class _Converted:
    """A JSON value converted once, for several evaluations (`to_cel`)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = json_to_cel(value)


def to_cel(value: Any) -> Any:
    """`value` converted once, to be passed to several evaluations."""
    return _Converted(value)


class Program:
    """A compiled expression."""

    def __init__(self, expression: str) -> None:
        self.expression = expression
        try:
            self._program = _ENVIRONMENT.program(_ENVIRONMENT.compile(expression))
        except CELParseError as exc:
            line = getattr(exc, "line", 1)
            column = getattr(exc, "column", 0)
            raise CompileError(f"ERROR: <input>:{line}:{column}: Syntax error") from None
        except Exception as exc:  # celpy raises plain exceptions for some bad input
            raise CompileError(f"ERROR: <input>: {exc}") from None

    def evaluate(self, variables: Mapping[str, Any]) -> Any:
        """The expression's value for these variables (JSON values, or `to_cel` values)."""
        activation = {
            name: value.value if isinstance(value, _Converted) else json_to_cel(value)
            for name, value in variables.items()
        }
        try:
            result = self._program.evaluate(activation)
        except CELEvalError as exc:
            raise EvaluationError(_reason(exc)) from None
        except Exception as exc:
            raise EvaluationError(str(exc)) from None
        if isinstance(result, CELEvalError):
            raise EvaluationError(_reason(result))
        return _to_python(result)


def _reason(error: CELEvalError) -> str:
    text = str(error.args[0]) if error.args else str(error)
    missing = _MISSING_MEMBER.fullmatch(text)
    if missing:
        return f"no such key: {missing.group(1)}"
    return text


@functools.lru_cache(maxsize=1024)
def compile_expression(expression: str) -> Program:
    """The compiled expression, shared by every caller that uses the same text."""
    return Program(expression)
