"""What every Table shares: columns, the printer type, durations, reading raw JSON, and the
`meta.k8s.io/v1 Table` envelope."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final, Literal

from inplace.api.objects import get_path as get_path  # re-exported for the table modules
from inplace.api.selectors import LabelSelector, SelectorError

_NS_PER_SECOND: Final = 1_000_000_000
_NS_PER_MINUTE: Final = 60 * _NS_PER_SECOND
_NS_PER_HOUR: Final = 60 * _NS_PER_MINUTE


def human_duration(seconds: float) -> str:
    """upstream duration.HumanDuration: ~2-3 significant figures ("5s", "3m10s", "2d1h", "2y").

    Up to two seconds in the future still reads "0s" (clock skew between hosts); further is
    "<invalid>".
    """
    d = round(seconds * _NS_PER_SECOND)
    whole_seconds = int(d / _NS_PER_SECOND)  # Go's int(d.Seconds()) truncates toward zero
    if whole_seconds < -1:
        return "<invalid>"
    if whole_seconds < 0:
        return "0s"
    if whole_seconds < 60 * 2:
        return f"{whole_seconds}s"
    minutes = d // _NS_PER_MINUTE
    if minutes < 10:
        s = (d // _NS_PER_SECOND) % 60
        return f"{minutes}m" if s == 0 else f"{minutes}m{s}s"
    if minutes < 60 * 3:
        return f"{minutes}m"
    hours = d // _NS_PER_HOUR
    if hours < 8:
        m = minutes % 60
        return f"{hours}h" if m == 0 else f"{hours}h{m}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        h = hours % 24
        return f"{hours // 24}d" if h == 0 else f"{hours // 24}d{h}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        dy = (hours // 24) % 365
        years = hours // 24 // 365
        return f"{years}y" if dy == 0 else f"{years}y{dy}d"
    return f"{hours // 24 // 365}y"


# --- column definitions --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Column:
    """One Table column (upstream ``TableColumnDefinition``); priority 1 = only with -o wide."""

    name: str
    type: str
    description: str
    priority: int = 0
    format: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type,
            "format": self.format,
            "description": self.description,
            "priority": self.priority,
        }


#: One object's cells, and the row's conditions (pods: Completed/Failed rows are greyed out).
Row = tuple[list[Any], list[dict[str, Any]] | None]


@dataclass(frozen=True, slots=True)
class TablePrinter:
    """How one kind prints as a Table (upstream's TableConvertor for a resource): its columns
    and the function that computes one object's cells. A kind names its printer in its
    strategy (`inplace.registry.kinds`); a printer's cells must line up with its columns."""

    columns: tuple[Column, ...]
    row: Callable[[Mapping[str, Any], datetime], Row]


# Descriptions are upstream's (SwaggerDoc of the field each column shows).
NAME_DOC: Final = (
    "Name must be unique within a namespace. Is required when creating resources, although some "
    "resources may allow a client to request the generation of an appropriate name "
    "automatically. Name is primarily intended for creation idempotence and configuration "
    "definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
)
AGE_DOC: Final = (
    "CreationTimestamp is a timestamp representing the server time when this object was "
    "created. It is not guaranteed to be set in happens-before order across separate "
    "operations. Clients may not set this value. It is represented in RFC3339 form and is in "
    "UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)
NAME_COLUMN: Final = Column("Name", "string", NAME_DOC, format="name")
AGE_COLUMN: Final = Column("Age", "string", AGE_DOC)
CONTAINERS_COLUMN: Final = Column(
    "Containers", "string", "Names of each container in the template.", priority=1
)
IMAGES_COLUMN: Final = Column(
    "Images", "string", "Images referenced by each container in the template.", priority=1
)


def selector_column(description: str) -> Column:
    return Column("Selector", "string", description, priority=1)


# What a CRD without printer columns gets.
_DEFAULT_COLUMNS: Final = (NAME_COLUMN, Column("Age", "date", AGE_DOC))


def column_definitions(printer: TablePrinter) -> list[dict[str, Any]]:
    """A printer's Table columns, as fresh dicts; priority 1 = only with `-o wide`."""
    return [c.as_dict() for c in printer.columns]


# --- helpers over raw JSON -----------------------------------------------------------------


def text_at(obj: Any, *path: str) -> str:
    value = get_path(obj, *path)
    return value if isinstance(value, str) else ""


def int_at(obj: Any, *path: str, default: int = 0) -> int:
    value = get_path(obj, *path)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return default
    return int(value)


def list_at(obj: Any, *path: str) -> list[Mapping[str, Any]]:
    value = get_path(obj, *path)
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def parse_time(value: Any) -> datetime | None:
    """An RFC 3339 timestamp (Time or MicroTime) as an aware datetime; None when unset."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _aware(now: datetime) -> datetime:
    return now if now.tzinfo is not None else now.replace(tzinfo=UTC)


def since(value: Any, now: datetime) -> str:
    """upstream translateTimestampSince: "<unknown>" for an unset time."""
    when = value if isinstance(value, datetime) else parse_time(value)
    if when is None:
        return "<unknown>"
    return human_duration((now - when).total_seconds())


def age(obj: Mapping[str, Any], now: datetime) -> str:
    return since(get_path(obj, "metadata", "creationTimestamp"), now)


def name_of(obj: Mapping[str, Any]) -> str:
    return text_at(obj, "metadata", "name")


def containers_cells(template_spec: Any) -> list[str]:
    """upstream layoutContainerCells: names and images, comma-joined."""
    containers = list_at(template_spec, "containers")
    return [
        ",".join(text_at(c, "name") for c in containers),
        ",".join(text_at(c, "image") for c in containers),
    ]


def format_selector(selector: Any, *, empty: str, invalid: str) -> str:
    """upstream LabelSelectorAsSelector(...).String(); `empty`/`invalid` differ per printer."""
    try:
        text = str(LabelSelector.from_dict(selector if isinstance(selector, Mapping) else None))
    except SelectorError:
        return invalid
    return text or empty


def format_labels(labels: Any) -> str:
    """Upstream ``labels.FormatLabels``: sorted ``k=v`` pairs, ``<none>`` when empty."""
    if not isinstance(labels, Mapping) or not labels:
        return "<none>"
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def condition(conditions: list[Mapping[str, Any]], type_: str) -> Mapping[str, Any] | None:
    return next((c for c in conditions if c.get("type") == type_), None)


def condition_true(conditions: list[Mapping[str, Any]], type_: str) -> bool:
    """upstream's has*Condition: the first condition of that type decides."""
    c = condition(conditions, type_)
    return c is not None and c.get("status") == "True"


def _print_default(obj: Mapping[str, Any], now: datetime) -> Row:
    return [name_of(obj), age(obj, now)], None


#: Name and Age: what a kind without a printer of its own gets (as a CRD without printer
#: columns does upstream).
DEFAULT_TABLE: Final = TablePrinter(_DEFAULT_COLUMNS, _print_default)


def _row_object(obj: Mapping[str, Any], include_object: str) -> Any:
    if include_object == "None":
        return None
    if include_object == "Object":
        return obj
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata") or {},
    }


def to_table(
    printer: TablePrinter,
    objects: Sequence[Mapping[str, Any]],
    *,
    now: datetime,
    include_object: Literal["None", "Metadata", "Object"] = "Metadata",
    list_metadata: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A `meta.k8s.io/v1 Table` of `objects` (all of the kind `printer` prints), as
    kube-apiserver answers it.

    `include_object` is the request's `includeObject`: "Metadata" (kubectl's default) puts a
    PartialObjectMetadata in each row, "Object" the object itself, "None" nothing.
    `list_metadata` is the list's metadata (resourceVersion, continue, remainingItemCount);
    without it, a single object's resourceVersion is used, as for a GET.
    """
    now = _aware(now)
    rows: list[dict[str, Any]] = []
    for obj in objects:
        cells, conditions = printer.row(obj, now)
        row: dict[str, Any] = {"cells": cells}
        if conditions:
            row["conditions"] = conditions
        row["object"] = _row_object(obj, include_object)
        rows.append(row)

    metadata: dict[str, Any] = {}
    if list_metadata is not None:
        for key in ("resourceVersion", "continue", "remainingItemCount"):
            value = list_metadata.get(key)
            if value not in (None, ""):
                metadata[key] = value
    elif len(objects) == 1 and (rv := text_at(objects[0], "metadata", "resourceVersion")):
        metadata["resourceVersion"] = rv
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": column_definitions(printer),
        "rows": rows,
    }
