"""Field errors as upstream reports them, field paths, name formats and typed access to JSON.

The toolkit every validator uses: a validator appends field errors (:class:`FieldError`) to a
list (so every bad field is reported at once) through the constructors here (``invalid``,
``required``, ``forbidden``, ...), builds paths with ``child_path``/``index_path``/``key_path``
(upstream's ``field.Path``), and reads JSON through ``as_map``/``as_str``/... which report a
wrong JSON type at its path instead of crashing. Sources: ``util/validation/field/errors.go``
and apimachinery ``util/validation``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from inplace.api.names import byte_len as _blen
from inplace.api.names import (
    dns1123_label_errors,
    dns1123_subdomain_errors,
)
from inplace.api.names import max_len_error as _max_len_error
from inplace.api.quantity import Quantity

# -- field errors --------------------------------------------------------------------------------

NOT_FOUND: Final = "FieldValueNotFound"
REQUIRED: Final = "FieldValueRequired"
DUPLICATE: Final = "FieldValueDuplicate"
INVALID: Final = "FieldValueInvalid"
NOT_SUPPORTED: Final = "FieldValueNotSupported"
FORBIDDEN: Final = "FieldValueForbidden"
TOO_LONG: Final = "FieldValueTooLong"
TOO_MANY: Final = "FieldValueTooMany"
TYPE_INVALID: Final = "FieldValueTypeInvalid"
INTERNAL: Final = "InternalError"

_TYPE_TEXT: Final = {
    NOT_FOUND: "Not found",
    REQUIRED: "Required value",
    DUPLICATE: "Duplicate value",
    INVALID: "Invalid value",
    NOT_SUPPORTED: "Unsupported value",
    FORBIDDEN: "Forbidden",
    TOO_LONG: "Too long",
    TOO_MANY: "Too many",
    TYPE_INVALID: "Invalid value",
    INTERNAL: "Internal error",
}
# Types whose message never shows the value (upstream ErrorBody).
_VALUELESS: Final = frozenset({REQUIRED, FORBIDDEN, TOO_LONG, INTERNAL})


class Bare(str):
    """A value printed without quotes, as Go prints a ``fmt.Stringer`` (``IntOrString``,
    ``Quantity``) with ``%s``."""

    __slots__ = ()


class GoStringMap:
    """A ``map[string]string`` printed as Go's ``%#v`` does (keys sorted)."""

    __slots__ = ("items",)

    def __init__(self, value: object) -> None:
        self.items: dict[str, str] | None = (
            {str(k): str(v) for k, v in value.items()} if isinstance(value, Mapping) else None
        )

    def __str__(self) -> str:
        if self.items is None:
            return "map[string]string(nil)"
        body = ", ".join(f"{go_quote(k)}:{go_quote(v)}" for k, v in sorted(self.items.items()))
        return f"map[string]string{{{body}}}"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GoStringMap) and other.items == self.items

    def __hash__(self) -> int:
        return hash(str(self))


_GO_ESCAPES: Final = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
    "\\": "\\\\",
    '"': '\\"',
}


def go_quote(text: str) -> str:
    """Go's ``%q``: double-quoted, printable runes kept, the rest escaped."""
    out = []
    for ch in text:
        if ch in _GO_ESCAPES:
            out.append(_GO_ESCAPES[ch])
        elif ch.isprintable():
            out.append(ch)
        elif ord(ch) < 0x80:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) <= 0xFFFF:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    return '"' + "".join(out) + '"'


def render(value: object) -> str:
    """A bad value as upstream's message shows it (strings quoted, numbers bare, nil null)."""
    if isinstance(value, Bare):
        return str(value)
    if isinstance(value, str):
        return go_quote(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float | GoStringMap | Quantity):
        return str(value)
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    except RecursionError:
        return "<nested too deeply to show>"
    except (TypeError, ValueError):
        return go_quote(type(value).__name__)


@dataclass(frozen=True)
class FieldError:
    """One bad field, as upstream's ``field.Error``: a type, a path, a detail, the bad value."""

    #: Upstream's ``ErrorType`` (the ``reason`` of a Status cause), e.g. ``FieldValueInvalid``.
    type: str
    #: Upstream path syntax: ``spec.containers[0].resources.requests[cpu]``.
    field: str
    #: What is wrong, e.g. ``must be less than or equal to cpu limit of 1``.
    detail: str = ""
    #: The offending value, shown by Invalid/NotSupported/Duplicate/NotFound messages.
    value: Any = None

    def body(self) -> str:
        """The message without the field (upstream ``ErrorBody``; a Status cause's message)."""
        text = _TYPE_TEXT.get(self.type, "Invalid value")
        if self.type not in _VALUELESS:
            text = f"{text}: {render(self.value)}"
        if self.detail:
            text = f"{text}: {self.detail}"
        return text

    def message(self) -> str:
        """Upstream ``Error()``: ``spec.containers: Required value``."""
        return f"{self.field}: {self.body()}"


def invalid(path: str, value: object, detail: str) -> FieldError:
    return FieldError(INVALID, path, detail, value)


def required(path: str, detail: str = "") -> FieldError:
    return FieldError(REQUIRED, path, detail, "")


def forbidden(path: str, detail: str) -> FieldError:
    return FieldError(FORBIDDEN, path, detail, "")


def duplicate(path: str, value: object) -> FieldError:
    return FieldError(DUPLICATE, path, "", value)


def not_found(path: str, value: object) -> FieldError:
    return FieldError(NOT_FOUND, path, "", value)


def not_supported(path: str, value: object, valid: Sequence[str]) -> FieldError:
    detail = "supported values: " + ", ".join(go_quote(v) for v in valid) if valid else ""
    return FieldError(NOT_SUPPORTED, path, detail, value)


def too_long(path: str, max_bytes: int) -> FieldError:
    """Upstream ``field.TooLong`` (v1.32+ wording)."""
    unit = "byte" if max_bytes == 1 else "bytes"
    return FieldError(TOO_LONG, path, f"may not be more than {max_bytes} {unit}", "")


def too_many(path: str, actual: int, maximum: int) -> FieldError:
    """Upstream ``field.TooMany``: ``Too many: 2: must have at most 1 items``."""
    return FieldError(TOO_MANY, path, f"must have at most {maximum} items", actual)


def type_invalid(path: str, value: object, type_name: str) -> FieldError:
    return FieldError(TYPE_INVALID, path, f"must be of type {type_name}", value)


class ValidationError(Exception):
    """An object that failed validation: the API server answers it with 422 ``Invalid``."""

    def __init__(
        self, kind: str, name: str, errors: Sequence[FieldError], *, group: str = ""
    ) -> None:
        unique: list[FieldError] = []
        seen: set[str] = set()
        for error in errors:
            key = f"{error.type}\x00{error.message()}"
            if key not in seen:
                seen.add(key)
                unique.append(error)
        self.kind = kind
        self.name = name
        self.group = group
        self.errors = unique
        super().__init__(self.message())

    @property
    def qualified_kind(self) -> str:
        """Upstream ``GroupKind.String()``: ``Pod``, ``Deployment.apps``."""
        return f"{self.kind}.{self.group}" if self.group else self.kind

    def message(self) -> str:
        """``Pod "web" is invalid: a: ...``; for several, ``... is invalid: [a: ..., b: ...]``."""
        head = f"{self.qualified_kind} {go_quote(self.name)} is invalid"
        messages = [error.message() for error in self.errors]
        if not messages:
            return head
        if len(messages) == 1:
            return f"{head}: {messages[0]}"
        return f"{head}: [{', '.join(messages)}]"

    def status(self) -> dict[str, Any]:
        """The ``kind: Status`` body of the 422 response (upstream ``NewInvalid``)."""
        causes = []
        for error in self.errors:
            cause = {"reason": error.type, "message": error.body()}
            if error.field:
                cause["field"] = error.field
            causes.append(cause)
        details: dict[str, Any] = {}
        if self.name:
            details["name"] = self.name
        if self.group:
            details["group"] = self.group
        details["kind"] = self.kind
        details["causes"] = causes
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message(),
            "reason": "Invalid",
            "details": details,
            "code": 422,
        }


# -- paths ----------------------------------------------------------------------------------------


def child_path(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def index_path(path: str, i: int) -> str:
    return f"{path}[{i}]"


def key_path(path: str, key: object) -> str:
    return f"{path}[{key}]"


# -- formats (apimachinery util/validation) ------------------------------------------------------

PERCENT_FMT: Final = "[0-9]+%"
PERCENT_MSG: Final = "a valid percent string must be a numeric string followed by an ending '%'"

PERCENT_RE: Final = re.compile(PERCENT_FMT)
_PORT_NAME_CHARSET_RE: Final = re.compile("[-a-z0-9]+")
_PORT_NAME_LETTER_RE: Final = re.compile("[a-z]")

MAX_INT32: Final = 2**31 - 1
NEGATIVE_MSG: Final = "must be greater than or equal to 0"
IMMUTABLE_MSG: Final = "field is immutable"


def inclusive_range_error(lo: int, hi: int) -> str:
    return f"must be between {lo} and {hi}, inclusive"


def port_name_errors(port: str) -> list[str]:
    errs = []
    if _blen(port) > 15:
        errs.append(_max_len_error(15))
    if not _PORT_NAME_CHARSET_RE.fullmatch(port):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not _PORT_NAME_LETTER_RE.search(port):
        errs.append("must contain at least one letter (a-z)")
    if "--" in port:
        errs.append("must not contain consecutive hyphens")
    if port and (port[0] == "-" or port[-1] == "-"):
        errs.append("must not begin or end with a hyphen")
    return errs


def _mask_trailing_dash(name: str) -> str:
    """Upstream ``maskTrailingDash``: a generateName may end in '-' (a suffix follows)."""
    if len(name) > 1 and name.endswith("-"):
        return name[:-2] + "a"
    return name


def name_is_dns_subdomain(name: str, prefix: bool) -> list[str]:
    return dns1123_subdomain_errors(_mask_trailing_dash(name) if prefix else name)


def name_is_dns_label(name: str, prefix: bool) -> list[str]:
    return dns1123_label_errors(_mask_trailing_dash(name) if prefix else name)


NameFn = Callable[[str, bool], list[str]]

# -- typed access to JSON ------------------------------------------------------------------------


def is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def as_map(errs: list[FieldError], value: object, path: str) -> Mapping[str, Any]:
    """`value` as an object; absent is empty; another JSON type is reported and is empty."""
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return value
    errs.append(type_invalid(path, value, "object"))
    return {}


def as_list(errs: list[FieldError], value: object, path: str) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, list | tuple):
        return list(value)
    errs.append(type_invalid(path, value, "array"))
    return []


def as_str(errs: list[FieldError], value: object, path: str) -> str:
    """`value` as a string; absent is ``""`` (Go's zero value); another type is reported."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    errs.append(type_invalid(path, value, "string"))
    return ""


def as_int(errs: list[FieldError], value: object, path: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    errs.append(type_invalid(path, value, "integer"))
    return None


def check_bool(errs: list[FieldError], value: object, path: str) -> None:
    if value is not None and not isinstance(value, bool):
        errs.append(type_invalid(path, value, "boolean"))


def as_str_map(errs: list[FieldError], value: object, path: str) -> dict[str, str]:
    result: dict[str, str] = {}
    for k, v in as_map(errs, value, path).items():
        if isinstance(v, str):
            result[str(k)] = v
        elif v is None:
            result[str(k)] = ""
        else:
            errs.append(type_invalid(key_path(path, k), v, "string"))
    return result


def or_empty(value: object) -> Mapping[str, Any]:
    """`value` if it is an object, else an empty one (for reading, never for reporting)."""
    return value if isinstance(value, Mapping) else {}


def lookup(obj: object, *keys: str) -> Any:
    """Nested lookup that never fails: None where any step is missing or not an object."""
    for key in keys:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(key)
    return obj


def objects_in(value: object) -> list[Mapping[str, Any]]:
    """The object elements of a list (others become empty objects, keeping indexes)."""
    if not isinstance(value, list | tuple):
        return []
    return [item if isinstance(item, Mapping) else {} for item in value]


def nonnegative(errs: list[FieldError], value: object, path: str) -> None:
    number = as_int(errs, value, path)
    if number is not None and number < 0:
        errs.append(invalid(path, number, NEGATIVE_MSG))
