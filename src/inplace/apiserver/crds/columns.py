"""`additionalPrinterColumns`: the Table a custom resource prints as, from JSONPath columns.

Upstream's table convertor for custom resources (apiextensions-apiserver
`pkg/registry/customresource/tableconvertor`): a Name column, then each printer column, whose
cell is the first result of its JSONPath (a missing value is an empty cell); `string` cells
are printed as kubectl's JSONPath prints a value (maps and lists as JSON), `integer`,
`number` and `boolean` cells keep their JSON value, and `date` cells become an age ("5m").
A CRD that declares no columns gets Age. The JSONPath subset is what CRDs use: `.a.b`,
`.a[0]`, `.a[*]`, `.a['b.c']` and filters such as `[?(@.type=="Ready")]`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Final

from inplace.api.tables import Column, TablePrinter
from inplace.api.tables.printer import AGE_COLUMN, NAME_COLUMN, age, name_of, since

#: Upstream's default for a column without a description.
_DESCRIPTION: Final = "Custom resource definition column (in JSONPath format): {}"
_FILTER = re.compile(r"""^\?\(@\.([\w.\-/]+)\s*(==|!=)\s*(?:"([^"]*)"|'([^']*)'|(\S+))\)$""")


class JSONPathError(ValueError):
    """A JSONPath this subset cannot read."""


def parse(path: str) -> list[Any]:
    """The steps of a JSONPath: field names (str), indices (int), `*`, or filters (tuple)."""
    text = path.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    text = text.removeprefix("$")
    steps: list[Any] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == ".":
            j = i + 1
            while j < len(text) and text[j] not in ".[":
                j += 1
            name = text[i + 1 : j]
            if not name:
                raise JSONPathError(f"invalid JSONPath {path!r}")
            steps.append("*" if name == "*" else name)
            i = j
        elif ch == "[":
            j = text.find("]", i)
            if j < 0:
                raise JSONPathError(f"unterminated [ in {path!r}")
            steps.append(_bracket(text[i + 1 : j], path))
            i = j + 1
        else:
            raise JSONPathError(f"invalid JSONPath {path!r}")
    return steps


def _bracket(inner: str, path: str) -> Any:
    inner = inner.strip()
    if inner == "*":
        return "*"
    if inner.lstrip("-").isdigit():
        return int(inner)
    if len(inner) >= 2 and inner[0] == inner[-1] and inner[0] in "'\"":
        return inner[1:-1]
    match = _FILTER.match(inner)
    if match:
        field, op, dq, sq, bare = match.groups()
        value = dq if dq is not None else sq if sq is not None else bare
        return (field.split("."), op, value)
    raise JSONPathError(f"unsupported JSONPath {path!r}")


def find(obj: Any, steps: Sequence[Any]) -> list[Any]:
    """Every value `steps` reaches in `obj`, in order (missing keys give nothing)."""
    current = [obj]
    for step in steps:
        found: list[Any] = []
        for value in current:
            if step == "*":
                if isinstance(value, Mapping):
                    found.extend(value.values())
                elif isinstance(value, list):
                    found.extend(value)
            elif isinstance(step, str):
                if isinstance(value, Mapping) and step in value:
                    found.append(value[step])
            elif isinstance(step, int):
                if isinstance(value, list) and -len(value) <= step < len(value):
                    found.append(value[step])
            elif isinstance(value, list):
                found.extend(item for item in value if _matches(item, step))
        current = found
    return current


def _matches(item: Any, condition: tuple[list[str], str, str]) -> bool:
    keys, op, expected = condition
    value: Any = item
    for key in keys:
        if not isinstance(value, Mapping) or key not in value:
            return False
        value = value[key]
    text = value if isinstance(value, str) else json.dumps(value)
    return (text == expected) == (op == "==")


def print_value(value: Any) -> str:
    """How kubectl's JSONPath prints one value: strings bare, everything else as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, separators=(",", ":"))


def _cell(type_: str, value: Any, now: datetime) -> Any:
    if type_ == "string":
        return print_value(value)
    if type_ == "integer":
        return (
            int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
        )
    if type_ == "number":
        return value if isinstance(value, int | float) and not isinstance(value, bool) else None
    if type_ == "boolean":
        return value if isinstance(value, bool) else None
    if type_ == "date":
        return since(value, now) if isinstance(value, str) else None
    return print_value(value)


def printer_for(columns: Sequence[Mapping[str, Any]]) -> TablePrinter:
    """The Table printer of a custom resource version with these printer columns."""
    if not columns:
        return TablePrinter(
            (NAME_COLUMN, AGE_COLUMN), lambda obj, now: ([name_of(obj), age(obj, now)], None)
        )
    compiled: list[tuple[str, list[Any] | None]] = []
    definitions = [NAME_COLUMN]
    for column in columns:
        path = str(column.get("jsonPath", ""))
        type_ = str(column.get("type", "string"))
        definitions.append(
            Column(
                str(column.get("name", "")),
                type_,
                str(column.get("description") or _DESCRIPTION.format(path)),
                priority=int(column.get("priority") or 0),
                format=str(column.get("format") or ""),
            )
        )
        try:
            compiled.append((type_, parse(path)))
        except JSONPathError:
            compiled.append((type_, None))

    def row(obj: Mapping[str, Any], now: datetime) -> tuple[list[Any], None]:
        cells: list[Any] = [name_of(obj)]
        for type_, steps in compiled:
            found = find(obj, steps) if steps is not None else []
            cells.append(_cell(type_, found[0], now) if found else None)
        return cells, None

    return TablePrinter(tuple(definitions), row)
