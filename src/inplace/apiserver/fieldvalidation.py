"""A write's `fieldValidation`: what becomes of unknown fields and wrongly-typed values.

The check itself is :mod:`inplace.registry.schema`'s; this is what the API server does with its
verdict, as upstream's handlers do: a wrong type is always refused (a 400 decode error, or a
422 Invalid for a kind served from a CRD schema); unknown fields are refused under `Strict`,
dropped with one `Warning` each under `Warn` (the default), and dropped silently under
`Ignore`. HTTP-free, like `rest.py`, which runs it on every create, update and patch.
"""

from __future__ import annotations

from typing import Any

from inplace.apiserver.errors import StatusError, bad_request
from inplace.registry.kinds import Kind
from inplace.registry.schema import (
    check_fields,
    is_crd,
    strict_decoding_error,
    unknown_field_warnings,
)

#: The values upstream accepts for the `fieldValidation` query parameter.
FIELD_VALIDATION_MODES = ("Ignore", "Warn", "Strict")


def validate_fields(kind: Kind, obj: dict[str, Any], mode: str) -> tuple[str, ...]:
    """Apply `fieldValidation` to `obj` (changed in place: unknown fields are dropped unless
    refused); the warnings to send back."""
    if mode not in FIELD_VALIDATION_MODES:
        raise bad_request(
            f'fieldValidation must be one of "Ignore", "Warn", "Strict", got "{mode}"'
        )
    report = check_fields(kind, obj)
    if report.type_errors:
        if is_crd(kind):
            raise StatusError(
                422,
                f'{kind.kind}.{kind.group} "{_name(obj)}" is invalid: {report.type_errors[0]}',
            )
        raise bad_request(strict_decoding_error(kind, report))
    if not report.unknown:
        return ()
    if mode == "Strict":
        raise bad_request(strict_decoding_error(kind, report))
    for path in report.unknown:
        drop_path(obj, path)
    if mode == "Warn":
        return tuple(unknown_field_warnings(report))
    return ()


def _name(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata")
    return str(meta.get("name", "")) if isinstance(meta, dict) else ""


def drop_path(obj: Any, path: str) -> None:
    """Remove the field at an upstream-style path such as `spec.containers[0].foo`."""
    segments: list[str | int] = []
    for part in path.lstrip(".").split("."):
        while "[" in part:
            head, _, rest = part.partition("[")
            if head:
                segments.append(head)
            index, _, part = rest.partition("]")
            segments.append(int(index) if index.isdigit() else index)
        if part:
            segments.append(part)
    target = obj
    for segment in segments[:-1]:
        try:
            target = target[segment]
        except (KeyError, IndexError, TypeError):
            return
    if isinstance(target, dict) and segments:
        target.pop(segments[-1], None)
