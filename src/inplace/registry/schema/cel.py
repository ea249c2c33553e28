"""`x-kubernetes-validations`: a CRD schema's CEL rules, evaluated with cel-python through
`inplace.registry.cel` (compiled once, shared with ValidatingAdmissionPolicy).

cel-python (`celpy`) evaluates the rules CRDs commonly carry as upstream's cel-go does:
comparisons of fields (`self.minReplicas <= self.maxReplicas`), `has()`, `size()`, string
functions (`startsWith`, `matches`), macros (`all`, `exists`) and transition rules against
`oldSelf` (checked only on an update that had an old value there, as upstream). A rule is
compiled once; a rule that does not compile is refused when the CRD is written.

Errors use upstream's wording (apiextensions-apiserver `pkg/apiserver/schema/cel`): a failed
rule is `<path>: Invalid value: "<type>": <message>`, where the message is the rule's
`message`, else `failed rule: <rule>`; `fieldPath` moves the error below the node, and
`reason` picks its type (`FieldValueForbidden`, `FieldValueRequired`, `FieldValueDuplicate`).
`messageExpression` is not evaluated: the static message (or the default) is used.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from inplace.api.validation.errors import DUPLICATE, FieldError, forbidden, invalid, required
from inplace.registry.cel import CompileError, EvaluationError, compile_expression


def compile_error(rule: str) -> str | None:
    """Why `rule` does not compile, or None (upstream: `compilation failed: ERROR: ...`)."""
    try:
        compile_expression(rule)
    except CompileError as exc:
        return f"compilation failed: {exc}"
    return None


def has_rules(schema: Any) -> bool:
    """Whether any node of a schema carries `x-kubernetes-validations`."""
    if not isinstance(schema, Mapping):
        return False
    if schema.get("x-kubernetes-validations"):
        return True
    children = list((schema.get("properties") or {}).values())
    children += [schema.get("items"), schema.get("additionalProperties")]
    return any(has_rules(child) for child in children)


def validate_rules(
    errs: list[FieldError], schema: Mapping[str, Any], obj: Any, old: Any = None
) -> None:
    """Append the failure of every rule of `schema` that `obj` (and `old`, on an update)
    breaks; the root's rules see the whole object as `self`."""
    _walk(errs, schema, obj, old, "")


def _type_word(schema: Mapping[str, Any]) -> str:
    return str(schema.get("type") or "object")


def _walk(
    errs: list[FieldError], schema: Mapping[str, Any], value: Any, old: Any, path: str
) -> None:
    if value is None:
        return
    for rule in schema.get("x-kubernetes-validations") or ():
        if isinstance(rule, Mapping) and isinstance(rule.get("rule"), str):
            _check(errs, rule, schema, value, old, path)
    properties = schema.get("properties")
    if isinstance(value, Mapping) and isinstance(properties, Mapping):
        for name, child in properties.items():
            if (
                isinstance(child, Mapping)
                and name in value
                and not (not path and name == "metadata")
            ):
                before = old.get(name) if isinstance(old, Mapping) else None
                _walk(errs, child, value[name], before, f"{path}.{name}" if path else name)
    items = schema.get("items")
    if isinstance(value, list) and isinstance(items, Mapping):
        for i, item in enumerate(value):
            _walk(errs, items, item, None, f"{path}[{i}]")
    additional = schema.get("additionalProperties")
    if isinstance(value, Mapping) and isinstance(additional, Mapping) and not properties:
        for key, item in value.items():
            before = old.get(key) if isinstance(old, Mapping) else None
            _walk(errs, additional, item, before, f"{path}[{key}]")


def _check(
    errs: list[FieldError],
    rule: Mapping[str, Any],
    schema: Mapping[str, Any],
    value: Any,
    old: Any,
    path: str,
) -> None:
    text = str(rule["rule"])
    transition = "oldSelf" in text
    if transition and old is None:
        return  # a transition rule only judges a change
    variables = {"self": value}
    if transition:
        variables["oldSelf"] = old
    target = path
    field_path = rule.get("fieldPath")
    if isinstance(field_path, str) and field_path:
        target = f"{path}{field_path}" if path else field_path.lstrip(".")
    try:
        verdict = compile_expression(text).evaluate(variables)
    except CompileError:
        return  # refused when the CRD was written
    except EvaluationError as exc:
        errs.append(invalid(target, _type_word(schema), f"rule evaluation error: {exc}"))
        return
    if verdict is True:
        return
    message = rule.get("message")
    detail = str(message) if isinstance(message, str) and message else f"failed rule: {text}"
    reason = rule.get("reason")
    if reason == "FieldValueForbidden":
        errs.append(forbidden(target, detail))
    elif reason == "FieldValueRequired":
        errs.append(required(target, detail))
    elif reason == DUPLICATE:
        errs.append(FieldError(DUPLICATE, target, detail, _type_word(schema)))
    else:
        errs.append(invalid(target, _type_word(schema), detail))
