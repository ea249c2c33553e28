"""Validation of API objects: upstream's rules, field paths and messages, every error at once.

The API server validates each write after :func:`inplace.api.defaults.apply_defaults` (as
upstream validates after defaulting, so fields such as ``restartPolicy`` or
``terminationGracePeriodSeconds`` are *required* here) and answers a
:class:`ValidationError` with a 422 ``kind: Status`` whose text is what kube-apiserver would
send, so ``kubectl`` output and client error handling behave the same::

    The Pod "web" is invalid: spec.containers[0].resources.requests: Invalid value: "2":
    must be less than or equal to cpu limit of 1

Sources: ``pkg/apis/core/validation/validation.go`` (``ValidatePodCreate``,
``ValidatePodUpdate``, ``ValidatePodStatusUpdate``, ``ValidatePodResize`` as of v1.33,
``validateResourceRequirements``, ``validateResizePolicy``), apps/batch/policy/scheduling/
coordination validation, apimachinery ``ObjectMeta`` and ``util/validation`` (the DNS-1123 and
qualified-name messages), ``util/validation/field/errors.go`` (the message format).

Deliberate differences, each because this server works on JSON rather than Go structs:

* Input that upstream would fail to *decode* (a quantity that does not parse, a string where
  a number belongs) is reported as a field error naming the exact field, with upstream's
  decode message where it has one (``quantities must match the regular expression ...``),
  instead of a 400 naming no field.
* Composite bad values (objects, lists) are rendered as JSON where Go prints ``%#v``; string
  maps, the common case in selector errors, are printed the Go way
  (``map[string]string{"app":"web"}``). The diff appended to "pod updates may not change
  fields other than ..." lists the changed fields instead of ``cmp.Diff`` output.
* Pod resize (:func:`validate_resize`) names the offending field (``spec.containers[0].image:
  Forbidden: only cpu and memory resources are mutable``). Upstream silently drops non-resize
  changes sent to the ``resize`` subresource; rejecting them is safer than storing them.
* Memory limit decreases on resize follow v1.34 (allowed; the node agent shrinks without
  killing, see DESIGN.md) unless ``allow_memory_limit_decrease=False`` asks for v1.33's rule.
* Job pod templates accept changes to container resources (DESIGN.md "mutable template
  resources"); upstream makes the whole template immutable.
* Events must name an ``involvedObject`` (ours; every component sets one).

Validation never raises anything but :class:`ValidationError`, whatever JSON it is given: a
crash here would be a 500 for bad input.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from inplace.api import resources
from inplace.api.annotations import OOM_KILL_DISABLE, RESIZE_POLICIES, RESIZE_POLICY
from inplace.api.kinds import Kind
from inplace.api.names import byte_len as _blen
from inplace.api.names import (
    dns1123_label_errors,
    dns1123_subdomain_errors,
    label_value_errors,
    qualified_name_errors,
)
from inplace.api.names import max_len_error as _max_len_error
from inplace.api.names import regex_error as _regex_error
from inplace.api.quantity import ERR_FORMAT_WRONG, Quantity, QuantityError

__all__ = [
    "DUPLICATE",
    "FORBIDDEN",
    "INTERNAL",
    "INVALID",
    "NOT_FOUND",
    "NOT_SUPPORTED",
    "REQUIRED",
    "TOO_LONG",
    "TYPE_INVALID",
    "FieldError",
    "ValidationError",
    "dns1123_label_errors",
    "dns1123_subdomain_errors",
    "label_value_errors",
    "qualified_name_errors",
    "validate_create",
    "validate_resize",
    "validate_status_update",
    "validate_update",
]

# -- field errors --------------------------------------------------------------------------------

NOT_FOUND: Final = "FieldValueNotFound"
REQUIRED: Final = "FieldValueRequired"
DUPLICATE: Final = "FieldValueDuplicate"
INVALID: Final = "FieldValueInvalid"
NOT_SUPPORTED: Final = "FieldValueNotSupported"
FORBIDDEN: Final = "FieldValueForbidden"
TOO_LONG: Final = "FieldValueTooLong"
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
    TYPE_INVALID: "Invalid value",
    INTERNAL: "Internal error",
}
# Types whose message never shows the value (upstream ErrorBody).
_VALUELESS: Final = frozenset({REQUIRED, FORBIDDEN, TOO_LONG, INTERNAL})


class _Bare(str):
    """A value printed without quotes, as Go prints a ``fmt.Stringer`` (``IntOrString``,
    ``Quantity``) with ``%s``."""

    __slots__ = ()


class _GoStringMap:
    """A ``map[string]string`` printed as Go's ``%#v`` does (keys sorted)."""

    __slots__ = ("items",)

    def __init__(self, value: object) -> None:
        self.items: dict[str, str] | None = (
            {str(k): str(v) for k, v in value.items()} if isinstance(value, Mapping) else None
        )

    def __str__(self) -> str:
        if self.items is None:
            return "map[string]string(nil)"
        body = ", ".join(f"{_go_quote(k)}:{_go_quote(v)}" for k, v in sorted(self.items.items()))
        return f"map[string]string{{{body}}}"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _GoStringMap) and other.items == self.items

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


def _go_quote(text: str) -> str:
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


def _render(value: object) -> str:
    """A bad value as upstream's message shows it (strings quoted, numbers bare, nil null)."""
    if isinstance(value, _Bare):
        return str(value)
    if isinstance(value, str):
        return _go_quote(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float | _GoStringMap | Quantity):
        return str(value)
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    except RecursionError:
        return "<nested too deeply to show>"
    except (TypeError, ValueError):
        return _go_quote(type(value).__name__)


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
            text = f"{text}: {_render(self.value)}"
        if self.detail:
            text = f"{text}: {self.detail}"
        return text

    def message(self) -> str:
        """Upstream ``Error()``: ``spec.containers: Required value``."""
        return f"{self.field}: {self.body()}"


def _invalid(path: str, value: object, detail: str) -> FieldError:
    return FieldError(INVALID, path, detail, value)


def _required(path: str, detail: str = "") -> FieldError:
    return FieldError(REQUIRED, path, detail, "")


def _forbidden(path: str, detail: str) -> FieldError:
    return FieldError(FORBIDDEN, path, detail, "")


def _duplicate(path: str, value: object) -> FieldError:
    return FieldError(DUPLICATE, path, "", value)


def _not_found(path: str, value: object) -> FieldError:
    return FieldError(NOT_FOUND, path, "", value)


def _not_supported(path: str, value: object, valid: Sequence[str]) -> FieldError:
    detail = "supported values: " + ", ".join(_go_quote(v) for v in valid) if valid else ""
    return FieldError(NOT_SUPPORTED, path, detail, value)


def _too_long(path: str, max_bytes: int) -> FieldError:
    return FieldError(TOO_LONG, path, f"must have at most {max_bytes} bytes", "")


def _type_invalid(path: str, value: object, type_name: str) -> FieldError:
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
        head = f"{self.qualified_kind} {_go_quote(self.name)} is invalid"
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


def _child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _index(path: str, i: int) -> str:
    return f"{path}[{i}]"


def _key(path: str, key: object) -> str:
    return f"{path}[{key}]"


# -- formats (apimachinery util/validation) ------------------------------------------------------

_PERCENT_FMT: Final = "[0-9]+%"
_PERCENT_MSG: Final = "a valid percent string must be a numeric string followed by an ending '%'"

_PERCENT_RE: Final = re.compile(_PERCENT_FMT)
_PORT_NAME_CHARSET_RE: Final = re.compile("[-a-z0-9]+")
_PORT_NAME_LETTER_RE: Final = re.compile("[a-z]")

_MAX_INT32: Final = 2**31 - 1
_NEGATIVE_MSG: Final = "must be greater than or equal to 0"
_IMMUTABLE_MSG: Final = "field is immutable"
_TOTAL_ANNOTATION_SIZE_LIMIT: Final = 256 * 1024


def _inclusive_range_error(lo: int, hi: int) -> str:
    return f"must be between {lo} and {hi}, inclusive"


def _port_name_errors(port: str) -> list[str]:
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


def _name_is_dns_subdomain(name: str, prefix: bool) -> list[str]:
    return dns1123_subdomain_errors(_mask_trailing_dash(name) if prefix else name)


def _name_is_dns_label(name: str, prefix: bool) -> list[str]:
    return dns1123_label_errors(_mask_trailing_dash(name) if prefix else name)


_NameFn = Callable[[str, bool], list[str]]

# -- typed access to JSON ------------------------------------------------------------------------


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _map(errs: list[FieldError], value: object, path: str) -> Mapping[str, Any]:
    """`value` as an object; absent is empty; another JSON type is reported and is empty."""
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return value
    errs.append(_type_invalid(path, value, "object"))
    return {}


def _list(errs: list[FieldError], value: object, path: str) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, list | tuple):
        return list(value)
    errs.append(_type_invalid(path, value, "array"))
    return []


def _str(errs: list[FieldError], value: object, path: str) -> str:
    """`value` as a string; absent is ``""`` (Go's zero value); another type is reported."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    errs.append(_type_invalid(path, value, "string"))
    return ""


def _int(errs: list[FieldError], value: object, path: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    errs.append(_type_invalid(path, value, "integer"))
    return None


def _bool(errs: list[FieldError], value: object, path: str) -> None:
    if value is not None and not isinstance(value, bool):
        errs.append(_type_invalid(path, value, "boolean"))


def _str_map(errs: list[FieldError], value: object, path: str) -> dict[str, str]:
    result: dict[str, str] = {}
    for k, v in _map(errs, value, path).items():
        if isinstance(v, str):
            result[str(k)] = v
        elif v is None:
            result[str(k)] = ""
        else:
            errs.append(_type_invalid(_key(path, k), v, "string"))
    return result


def _obj(value: object) -> Mapping[str, Any]:
    """`value` if it is an object, else an empty one (for reading, never for reporting)."""
    return value if isinstance(value, Mapping) else {}


def _sub(obj: object, *keys: str) -> Any:
    """Nested lookup that never fails: None where any step is missing or not an object."""
    for key in keys:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(key)
    return obj


def _maps(value: object) -> list[Mapping[str, Any]]:
    """The object elements of a list (others become empty objects, keeping indexes)."""
    if not isinstance(value, list | tuple):
        return []
    return [item if isinstance(item, Mapping) else {} for item in value]


def _nonnegative(errs: list[FieldError], value: object, path: str) -> None:
    number = _int(errs, value, path)
    if number is not None and number < 0:
        errs.append(_invalid(path, number, _NEGATIVE_MSG))


# -- metadata ------------------------------------------------------------------------------------

_STANDARD_FINALIZERS: Final = frozenset({"kubernetes", "orphan", "foregroundDeletion"})


def _validate_labels(errs: list[FieldError], value: object, path: str) -> dict[str, str]:
    """Upstream ``ValidateLabels``: keys are qualified names, values valid label values."""
    labels = _str_map(errs, value, path)
    for k, v in labels.items():
        errs.extend(_invalid(path, k, msg) for msg in qualified_name_errors(k))
        errs.extend(_invalid(path, v, msg) for msg in label_value_errors(v))
    return labels


def _validate_annotations(errs: list[FieldError], value: object, path: str) -> dict[str, str]:
    annotations = _str_map(errs, value, path)
    total = 0
    for k, v in annotations.items():
        errs.extend(_invalid(path, k, msg) for msg in qualified_name_errors(k.lower()))
        total += _blen(k) + _blen(v)
    if total > _TOTAL_ANNOTATION_SIZE_LIMIT:
        errs.append(_too_long(path, _TOTAL_ANNOTATION_SIZE_LIMIT))
    return annotations


def _validate_object_meta(
    errs: list[FieldError],
    obj: Mapping[str, Any],
    *,
    namespaced: bool,
    name_fn: _NameFn,
    path: str = "metadata",
) -> Mapping[str, Any]:
    """Upstream ``ValidateObjectMeta`` for a whole object's ``metadata``; returns it."""
    meta = _map(errs, obj.get("metadata"), path)
    generate_name = _str(errs, meta.get("generateName"), _child(path, "generateName"))
    if generate_name:
        errs.extend(
            _invalid(_child(path, "generateName"), generate_name, msg)
            for msg in name_fn(generate_name, True)
        )
    name = _str(errs, meta.get("name"), _child(path, "name"))
    if not name:
        errs.append(_required(_child(path, "name"), "name or generateName is required"))
    else:
        errs.extend(_invalid(_child(path, "name"), name, msg) for msg in name_fn(name, False))
    namespace = _str(errs, meta.get("namespace"), _child(path, "namespace"))
    if namespaced:
        if not namespace:
            errs.append(_required(_child(path, "namespace")))
        else:
            errs.extend(
                _invalid(_child(path, "namespace"), namespace, msg)
                for msg in _name_is_dns_label(namespace, False)
            )
    elif namespace:
        errs.append(_forbidden(_child(path, "namespace"), "not allowed on this type"))
    _validate_meta_common(errs, meta, path)
    return meta


def _validate_meta_common(errs: list[FieldError], meta: Mapping[str, Any], path: str) -> None:
    _nonnegative(errs, meta.get("generation"), _child(path, "generation"))
    _validate_labels(errs, meta.get("labels"), _child(path, "labels"))
    _validate_annotations(errs, meta.get("annotations"), _child(path, "annotations"))
    refs_path = _child(path, "ownerReferences")
    controllers = []
    for ref in _maps(_list(errs, meta.get("ownerReferences"), refs_path)):
        api_version = ref.get("apiVersion")
        version = api_version.rsplit("/", 1)[-1] if isinstance(api_version, str) else ""
        if not version:
            errs.append(
                _invalid(_child(refs_path, "apiVersion"), api_version, "version must not be empty")
            )
        for key in ("kind", "name", "uid"):
            value = ref.get(key)
            if not isinstance(value, str) or not value:
                errs.append(_invalid(_child(refs_path, key), value or "", "must not be empty"))
        if ref.get("controller") is True:
            controllers.append(f"{ref.get('kind')}/{ref.get('name')}")
    if len(controllers) > 1:
        errs.append(
            _invalid(
                refs_path,
                meta.get("ownerReferences"),
                'Only one reference can have Controller set to true. Found "true" in '
                f"references for {controllers[0]} and {controllers[1]}",
            )
        )
    fin_path = _child(path, "finalizers")
    finalizers = _list(errs, meta.get("finalizers"), fin_path)
    for i, finalizer in enumerate(finalizers):
        text = _str(errs, finalizer, _index(fin_path, i))
        errs.extend(_invalid(fin_path, text, msg) for msg in qualified_name_errors(text))
        if "/" not in text and text not in _STANDARD_FINALIZERS:
            errs.append(
                _invalid(
                    _index(fin_path, i),
                    text,
                    "name is neither a standard finalizer name nor is it fully qualified",
                )
            )
    if "orphan" in finalizers and "foregroundDeletion" in finalizers:
        errs.append(
            _invalid(
                fin_path, finalizers, "finalizer orphan and foregroundDeletion cannot be both set"
            )
        )


def _validate_object_meta_update(
    errs: list[FieldError], new: Mapping[str, Any], old: Mapping[str, Any]
) -> None:
    """Upstream ``ValidateObjectMetaUpdate``: identity and timestamps never change."""
    path = "metadata"
    new_meta, old_meta = _obj(new.get("metadata")), _obj(old.get("metadata"))
    if old_meta.get("deletionTimestamp"):
        old_fins = old_meta.get("finalizers")
        new_fins = new_meta.get("finalizers")
        extra = sorted(
            {f for f in (new_fins if isinstance(new_fins, list) else []) if isinstance(f, str)}
            - {f for f in (old_fins if isinstance(old_fins, list) else []) if isinstance(f, str)}
        )
        if extra:
            listed = ", ".join(_go_quote(f) for f in extra)
            errs.append(
                _forbidden(
                    _child(path, "finalizers"),
                    "no new finalizers can be added if the object is being deleted, found new "
                    f"finalizers []string{{{listed}}}",
                )
            )
    new_gen, old_gen = new_meta.get("generation"), old_meta.get("generation")
    if isinstance(new_gen, int) and isinstance(old_gen, int) and new_gen < old_gen:
        errs.append(_invalid(_child(path, "generation"), new_gen, "must not be decremented"))
    for key in (
        "name",
        "namespace",
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
    ):
        new_value, old_value = new_meta.get(key), old_meta.get(key)
        if _semantic(new_value) != _semantic(old_value):
            shown = new_value if new_value is not None or key != "name" else ""
            errs.append(_invalid(_child(path, key), shown, _IMMUTABLE_MSG))


def _object_name(obj: object) -> str:
    name = _sub(obj, "metadata", "name")
    if isinstance(name, str) and name:
        return name
    generate = _sub(obj, "metadata", "generateName")
    return generate if isinstance(generate, str) else ""


# -- label selectors -----------------------------------------------------------------------------

_SELECTOR_OPERATORS: Final = ("In", "NotIn", "Exists", "DoesNotExist")


def _validate_label_selector(errs: list[FieldError], value: object, path: str) -> bool:
    """Upstream ``ValidateLabelSelector``; True when the selector is usable for matching."""
    before = len(errs)
    selector = _map(errs, value, path)
    _validate_labels(errs, selector.get("matchLabels"), _child(path, "matchLabels"))
    exprs_path = _child(path, "matchExpressions")
    for i, expr in enumerate(_maps(_list(errs, selector.get("matchExpressions"), exprs_path))):
        expr_path = _index(exprs_path, i)
        operator = _str(errs, expr.get("operator"), _child(expr_path, "operator"))
        values = _list(errs, expr.get("values"), _child(expr_path, "values"))
        if operator in ("In", "NotIn"):
            if not values:
                errs.append(
                    _required(
                        _child(expr_path, "values"),
                        "must be specified when `operator` is 'In' or 'NotIn'",
                    )
                )
        elif operator in ("Exists", "DoesNotExist"):
            if values:
                errs.append(
                    _forbidden(
                        _child(expr_path, "values"),
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    )
                )
        else:
            errs.append(
                _invalid(_child(expr_path, "operator"), operator, "not a valid selector operator")
            )
        key = _str(errs, expr.get("key"), _child(expr_path, "key"))
        errs.extend(
            _invalid(_child(expr_path, "key"), key, msg) for msg in qualified_name_errors(key)
        )
        for j, item in enumerate(values):
            item_path = _index(_child(expr_path, "values"), j)
            text = _str(errs, item, item_path)
            errs.extend(_invalid(item_path, text, msg) for msg in label_value_errors(text))
    return len(errs) == before


def _selector_is_empty(selector: Mapping[str, Any]) -> bool:
    return not selector.get("matchLabels") and not selector.get("matchExpressions")


def _selector_matches(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """Whether a (validated) ``metav1.LabelSelector`` selects `labels`."""
    match_labels = selector.get("matchLabels")
    if isinstance(match_labels, Mapping):
        for k, v in match_labels.items():
            if labels.get(k) != (v if v is not None else ""):
                return False
    expressions = selector.get("matchExpressions")
    for expr in _maps(expressions):
        key, op = expr.get("key"), expr.get("operator")
        raw_values = expr.get("values")
        values = raw_values if isinstance(raw_values, list) else []
        present = isinstance(key, str) and key in labels
        value = labels.get(key) if isinstance(key, str) else None
        if (
            (op == "In" and not (present and value in values))
            or (op == "NotIn" and present and value in values)
            or (op == "Exists" and not present)
            or (op == "DoesNotExist" and present)
        ):
            return False
    return True


def _template_labels(template: object) -> dict[str, str]:
    labels = _sub(template, "metadata", "labels")
    if not isinstance(labels, Mapping):
        return {}
    return {str(k): v for k, v in labels.items() if isinstance(v, str)}


# -- quantities and resource requirements ---------------------------------------------------------

_CPU: Final = "cpu"
_MEMORY: Final = "memory"
_HUGEPAGES_PREFIX: Final = "hugepages-"
_STANDARD_CONTAINER_RESOURCES: Final = frozenset({"cpu", "memory", "ephemeral-storage"})
_STANDARD_RESOURCES: Final = frozenset(
    {
        "cpu",
        "memory",
        "ephemeral-storage",
        "requests.cpu",
        "requests.memory",
        "requests.ephemeral-storage",
        "limits.cpu",
        "limits.memory",
        "limits.ephemeral-storage",
        "pods",
        "services",
        "replicationcontrollers",
        "resourcequotas",
        "services.loadbalancers",
        "services.nodeports",
        "secrets",
        "configmaps",
        "persistentvolumeclaims",
        "storage",
        "requests.storage",
    }
)
_INTEGER_RESOURCES: Final = frozenset(
    {
        "pods",
        "services",
        "replicationcontrollers",
        "resourcequotas",
        "services.loadbalancers",
        "services.nodeports",
        "secrets",
        "configmaps",
        "persistentvolumeclaims",
    }
)


def _is_hugepages(name: str) -> bool:
    return name.startswith(_HUGEPAGES_PREFIX)


def _is_native(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def _is_extended(name: str) -> bool:
    if _is_native(name) or name.startswith("requests."):
        return False
    return not qualified_name_errors("requests." + name)


def _overcommit_allowed(name: str) -> bool:
    return _is_native(name) and not _is_hugepages(name)


def _is_standard_resource(name: str) -> bool:
    return (
        name in _STANDARD_RESOURCES
        or _is_hugepages(name)
        or name.startswith("requests." + _HUGEPAGES_PREFIX)
    )


def _container_resource_name_errors(name: str, path: str) -> list[FieldError]:
    """Upstream ``validateContainerResourceName``."""
    errs = [_invalid(path, name, msg) for msg in qualified_name_errors(name)]
    if not errs and "/" not in name and not _is_standard_resource(name):
        errs.append(_invalid(path, name, "must be a standard resource type or fully qualified"))
    if "/" not in name:
        if name not in _STANDARD_CONTAINER_RESOURCES and not _is_hugepages(name):
            errs.append(_invalid(path, name, "must be a standard resource for containers"))
    elif not _is_native(name) and not _is_extended(name):
        errs.append(_invalid(path, name, "doesn't follow extended resource name standard"))
    return errs


def _parse_quantity(errs: list[FieldError], value: object, path: str) -> Quantity | None:
    """A JSON value as a quantity; a bad one is reported at `path` with upstream's reason."""
    if isinstance(value, bool) or not (value is None or isinstance(value, str | int | float)):
        errs.append(_invalid(path, value, ERR_FORMAT_WRONG))
        return None
    try:
        return Quantity.from_json(value)
    except QuantityError as exc:
        errs.append(_invalid(path, value, exc.reason))
    except (ValueError, OverflowError, ArithmeticError):
        errs.append(_invalid(path, value, ERR_FORMAT_WRONG))
    return None


def _quantity_value_checks(errs: list[FieldError], name: str, q: Quantity, path: str) -> None:
    """Upstream ``ValidateResourceQuantityValue``: non-negative, whole where it must be."""
    if q.sign() < 0:
        errs.append(_invalid(path, str(q), _NEGATIVE_MSG))
    if (name in _INTEGER_RESOURCES or _is_extended(name)) and q.milli_value() % 1000:
        errs.append(_invalid(path, _Bare(str(q)), "must be an integer"))


def _parse_resource_list(
    errs: list[FieldError],
    value: object,
    path: str,
    *,
    name_check: Callable[[str, str], list[FieldError]] | None = None,
) -> dict[str, Quantity]:
    parsed: dict[str, Quantity] = {}
    for name, raw in _map(errs, value, path).items():
        name = str(name)
        item_path = _key(path, name)
        if name_check is not None:
            errs.extend(name_check(name, item_path))
        q = _parse_quantity(errs, raw, item_path)
        if q is None:
            continue
        _quantity_value_checks(errs, name, q, item_path)
        parsed[name] = q
    return parsed


def _validate_resource_requirements(errs: list[FieldError], value: object, path: str) -> None:
    """Upstream ``validateResourceRequirements``: names, quantities, requests <= limits."""
    res = _map(errs, value, path)
    lim_path, req_path = _child(path, "limits"), _child(path, "requests")
    raw_limits = _map(errs, res.get("limits"), lim_path)
    limits = _parse_resource_list(
        errs, raw_limits, lim_path, name_check=_container_resource_name_errors
    )
    requests = _parse_resource_list(
        errs, res.get("requests"), req_path, name_check=_container_resource_name_errors
    )
    for name, quantity in requests.items():
        limit = limits.get(name)
        if limit is not None:
            if quantity != limit and not _overcommit_allowed(name):
                errs.append(
                    _invalid(req_path, str(quantity), f"must be equal to {name} limit of {limit}")
                )
            elif quantity > limit:
                errs.append(
                    _invalid(
                        req_path,
                        str(quantity),
                        f"must be less than or equal to {name} limit of {limit}",
                    )
                )
        elif name not in raw_limits and not _overcommit_allowed(name):
            errs.append(_required(lim_path, "Limit must be set for non overcommitable resources"))
    names = set(limits) | set(requests)
    if any(_is_hugepages(n) for n in names) and not names & {_CPU, _MEMORY}:
        errs.append(_forbidden(path, "HugePages require cpu or memory"))
    claims_path = _child(path, "claims")
    for i, claim in enumerate(_maps(_list(errs, res.get("claims"), claims_path))):
        if not claim.get("name"):
            errs.append(_required(_index(claims_path, i)))


# -- containers ----------------------------------------------------------------------------------

_PULL_POLICIES: Final = ("Always", "IfNotPresent", "Never")
_TERMINATION_MESSAGE_POLICIES: Final = ("File", "FallbackToLogsOnError")
_PROTOCOLS: Final = ("SCTP", "TCP", "UDP")
_RESIZE_RESOURCES: Final = ("cpu", "memory")
_RESIZE_POLICIES: Final = ("NotRequired", "RestartContainer")
_RESTART_POLICIES: Final = ("Always", "OnFailure", "Never")
_DNS_POLICIES: Final = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
_PREEMPTION_POLICIES: Final = ("PreemptLowerPriority", "Never")
_TAINT_EFFECTS: Final = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_INIT_ONLY_FORBIDDEN: Final = ("lifecycle", "livenessProbe", "readinessProbe", "startupProbe")


def _validate_resize_policy(
    errs: list[FieldError], value: object, path: str, pod_restart_policy: str
) -> None:
    """Upstream ``validateResizePolicy``, including v1.33's rule that a pod which is never
    restarted may only be resized in place."""
    seen: set[str] = set()
    for i, policy in enumerate(_maps(_list(errs, value, path))):
        resource_name = _str(
            errs, policy.get("resourceName"), _child(_index(path, i), "resourceName")
        )
        restart = _str(errs, policy.get("restartPolicy"), _child(_index(path, i), "restartPolicy"))
        if resource_name in seen:
            errs.append(_duplicate(_index(path, i), resource_name))
        seen.add(resource_name)
        if resource_name == "":
            errs.append(_required(path))
        elif resource_name not in _RESIZE_RESOURCES:
            errs.append(_not_supported(path, resource_name, _RESIZE_RESOURCES))
        if restart == "":
            errs.append(_required(path))
        elif restart not in _RESIZE_POLICIES:
            errs.append(_not_supported(path, restart, _RESIZE_POLICIES))
        if pod_restart_policy == "Never" and restart != "NotRequired":
            errs.append(
                _invalid(path, restart, "must be 'NotRequired' when `restartPolicy` is 'Never'")
            )


def _validate_ports(errs: list[FieldError], value: object, path: str) -> None:
    names: set[str] = set()
    for i, port in enumerate(_maps(_list(errs, value, path))):
        idx = _index(path, i)
        name = _str(errs, port.get("name"), _child(idx, "name"))
        if name:
            msgs = _port_name_errors(name)
            if msgs:
                errs.extend(_invalid(_child(idx, "name"), name, msg) for msg in msgs)
            elif name in names:
                errs.append(_duplicate(_child(idx, "name"), name))
            else:
                names.add(name)
        container_port = _int(errs, port.get("containerPort"), _child(idx, "containerPort"))
        if not container_port:
            if port.get("containerPort") is None or container_port == 0:
                errs.append(_required(_child(idx, "containerPort")))
        elif not 1 <= container_port <= 65535:
            errs.append(
                _invalid(
                    _child(idx, "containerPort"), container_port, _inclusive_range_error(1, 65535)
                )
            )
        host_port = _int(errs, port.get("hostPort"), _child(idx, "hostPort"))
        if host_port and not 1 <= host_port <= 65535:
            errs.append(
                _invalid(_child(idx, "hostPort"), host_port, _inclusive_range_error(1, 65535))
            )
        protocol = _str(errs, port.get("protocol"), _child(idx, "protocol"))
        if not protocol:
            errs.append(_required(_child(idx, "protocol")))
        elif protocol not in _PROTOCOLS:
            errs.append(_not_supported(_child(idx, "protocol"), protocol, _PROTOCOLS))


def _validate_env(errs: list[FieldError], value: object, path: str) -> None:
    for i, env in enumerate(_maps(_list(errs, value, path))):
        idx = _index(path, i)
        name = _str(errs, env.get("name"), _child(idx, "name"))
        if not name:
            errs.append(_required(_child(idx, "name")))
        elif any(ord(ch) > 0x7F or not ch.isprintable() or ch == "=" for ch in name):
            errs.append(
                _invalid(
                    _child(idx, "name"),
                    name,
                    "a valid environment variable name must consist only of printable ASCII "
                    "characters other than '='",
                )
            )
        _str(errs, env.get("value"), _child(idx, "value"))


def _validate_string_list(errs: list[FieldError], value: object, path: str) -> None:
    for i, item in enumerate(_list(errs, value, path)):
        _str(errs, item, _index(path, i))


def _validate_container_common(
    errs: list[FieldError],
    container: Mapping[str, Any],
    path: str,
    *,
    pod_restart_policy: str,
    volumes: set[str],
) -> str:
    """Upstream ``validateContainerCommon``; returns the container's name."""
    name_path = _child(path, "name")
    name = _str(errs, container.get("name"), name_path)
    if not name:
        errs.append(_required(name_path))
    else:
        errs.extend(_invalid(name_path, name, msg) for msg in dns1123_label_errors(name))
    image = _str(errs, container.get("image"), _child(path, "image"))
    if not image:
        errs.append(_required(_child(path, "image")))
    _validate_string_list(errs, container.get("command"), _child(path, "command"))
    _validate_string_list(errs, container.get("args"), _child(path, "args"))
    _str(errs, container.get("workingDir"), _child(path, "workingDir"))
    tmp_path = _child(path, "terminationMessagePolicy")
    policy = _str(errs, container.get("terminationMessagePolicy"), tmp_path)
    if not policy:
        errs.append(_required(tmp_path))
    elif policy not in _TERMINATION_MESSAGE_POLICIES:
        errs.append(_not_supported(tmp_path, policy, _TERMINATION_MESSAGE_POLICIES))
    _validate_ports(errs, container.get("ports"), _child(path, "ports"))
    _validate_env(errs, container.get("env"), _child(path, "env"))
    mounts_path = _child(path, "volumeMounts")
    mount_points: set[str] = set()
    for i, mount in enumerate(_maps(_list(errs, container.get("volumeMounts"), mounts_path))):
        idx = _index(mounts_path, i)
        mount_name = _str(errs, mount.get("name"), _child(idx, "name"))
        if not mount_name:
            errs.append(_required(_child(idx, "name")))
        if mount_name not in volumes:
            errs.append(_not_found(_child(idx, "name"), mount_name))
        mount_path = _str(errs, mount.get("mountPath"), _child(idx, "mountPath"))
        if not mount_path:
            errs.append(_required(_child(idx, "mountPath")))
        if mount_path in mount_points:
            errs.append(_invalid(_child(idx, "mountPath"), mount_path, "must be unique"))
        mount_points.add(mount_path)
    pull_path = _child(path, "imagePullPolicy")
    pull = _str(errs, container.get("imagePullPolicy"), pull_path)
    if not pull:
        errs.append(_required(pull_path))
    elif pull not in _PULL_POLICIES:
        errs.append(_not_supported(pull_path, pull, _PULL_POLICIES))
    _validate_resource_requirements(errs, container.get("resources"), _child(path, "resources"))
    _validate_resize_policy(
        errs, container.get("resizePolicy"), _child(path, "resizePolicy"), pod_restart_policy
    )
    _map(errs, container.get("securityContext"), _child(path, "securityContext"))
    return name


def _validate_containers(
    errs: list[FieldError],
    spec: Mapping[str, Any],
    path: str,
    *,
    restart_policy: str,
    volumes: set[str],
) -> None:
    """Regular, init and ephemeral containers: each valid, names unique across all of them."""
    containers_path = _child(path, "containers")
    containers = _maps(_list(errs, spec.get("containers"), containers_path))
    if not containers:
        errs.append(_required(containers_path))
    names: set[str] = set()
    for i, container in enumerate(containers):
        idx = _index(containers_path, i)
        name = _validate_container_common(
            errs, container, idx, pod_restart_policy=restart_policy, volumes=volumes
        )
        if name in names:
            errs.append(_duplicate(_child(idx, "name"), name))
        else:
            names.add(name)
        if container.get("restartPolicy") is not None:
            errs.append(
                _forbidden(_child(idx, "restartPolicy"), "may not be set for non-init containers")
            )
    init_path = _child(path, "initContainers")
    for i, container in enumerate(_maps(_list(errs, spec.get("initContainers"), init_path))):
        idx = _index(init_path, i)
        name = _validate_container_common(
            errs, container, idx, pod_restart_policy=restart_policy, volumes=volumes
        )
        restart = container.get("restartPolicy")
        if restart is not None:
            restart_text = _str(errs, restart, _child(idx, "restartPolicy"))
            if restart_text != "Always":
                errs.append(_not_supported(_child(idx, "restartPolicy"), restart_text, ("Always",)))
        if name in names:
            errs.append(_duplicate(_child(idx, "name"), name))
        elif name:
            names.add(name)
        if restart != "Always":
            for key in _INIT_ONLY_FORBIDDEN:
                if container.get(key) is not None:
                    errs.append(
                        _forbidden(
                            _child(idx, key),
                            "may not be set for init containers without restartPolicy=Always",
                        )
                    )
    eph_path = _child(path, "ephemeralContainers")
    for i, container in enumerate(_maps(_list(errs, spec.get("ephemeralContainers"), eph_path))):
        idx = _index(eph_path, i)
        name = _validate_container_common(
            errs, container, idx, pod_restart_policy=restart_policy, volumes=volumes
        )
        if name in names:
            errs.append(_duplicate(_child(idx, "name"), name))
        else:
            names.add(name)


def _validate_tolerations(errs: list[FieldError], value: object, path: str) -> None:
    """Upstream ``ValidateTolerations``."""
    for i, toleration in enumerate(_maps(_list(errs, value, path))):
        idx = _index(path, i)
        key = _str(errs, toleration.get("key"), _child(idx, "key"))
        operator = _str(errs, toleration.get("operator"), _child(idx, "operator"))
        tol_value = _str(errs, toleration.get("value"), _child(idx, "value"))
        effect = _str(errs, toleration.get("effect"), _child(idx, "effect"))
        seconds = _int(errs, toleration.get("tolerationSeconds"), _child(idx, "tolerationSeconds"))
        if key:
            errs.extend(
                _invalid(_child(idx, "key"), key, msg) for msg in qualified_name_errors(key)
            )
        if not key and operator != "Exists":
            errs.append(
                _invalid(
                    _child(idx, "operator"),
                    operator,
                    'operator must be Exists when `key` is empty, which means "match all values '
                    'and all keys"',
                )
            )
        if seconds is not None and effect != "NoExecute":
            errs.append(
                _invalid(
                    _child(idx, "effect"),
                    effect,
                    "effect must be 'NoExecute' when `tolerationSeconds` is set",
                )
            )
        if operator in ("Equal", ""):
            msgs = label_value_errors(tol_value)
            if msgs:
                errs.append(_invalid(_child(idx, "operator"), tol_value, ";".join(msgs)))
        elif operator == "Exists":
            if tol_value:
                errs.append(
                    _invalid(
                        _child(idx, "operator"),
                        tol_value,
                        "value must be empty when `operator` is 'Exists'",
                    )
                )
        else:
            errs.append(_not_supported(_child(idx, "operator"), operator, ("Equal", "Exists")))
        if effect and effect not in _TAINT_EFFECTS:
            errs.append(_not_supported(_child(idx, "effect"), effect, _TAINT_EFFECTS))


def _validate_name_field(errs: list[FieldError], value: object, path: str, name_fn: _NameFn) -> str:
    text = _str(errs, value, path)
    if text:
        errs.extend(_invalid(path, text, msg) for msg in name_fn(text, False))
    return text


def _validate_pod_spec(errs: list[FieldError], value: object, path: str) -> Mapping[str, Any]:
    """Upstream ``ValidatePodSpec`` (pods and pod templates alike); returns the spec."""
    spec = _map(errs, value, path)
    grace_path = _child(path, "terminationGracePeriodSeconds")
    if spec.get("terminationGracePeriodSeconds") is None:
        errs.append(_required(grace_path))
    else:
        _int(errs, spec.get("terminationGracePeriodSeconds"), grace_path)
    volumes_path = _child(path, "volumes")
    volumes: set[str] = set()
    for i, volume in enumerate(_maps(_list(errs, spec.get("volumes"), volumes_path))):
        name_path = _child(_index(volumes_path, i), "name")
        name = _str(errs, volume.get("name"), name_path)
        if not name:
            errs.append(_required(name_path))
        else:
            errs.extend(_invalid(name_path, name, msg) for msg in dns1123_label_errors(name))
        if name in volumes:
            errs.append(_duplicate(name_path, name))
        volumes.add(name)
    restart_path = _child(path, "restartPolicy")
    restart = _str(errs, spec.get("restartPolicy"), restart_path)
    _validate_containers(errs, spec, path, restart_policy=restart, volumes=volumes)
    if not restart:
        errs.append(_required(restart_path))
    elif restart not in _RESTART_POLICIES:
        errs.append(_not_supported(restart_path, restart, _RESTART_POLICIES))
    dns_path = _child(path, "dnsPolicy")
    dns = _str(errs, spec.get("dnsPolicy"), dns_path)
    if not dns:
        errs.append(_required(dns_path))
    elif dns not in _DNS_POLICIES:
        errs.append(_not_supported(dns_path, dns, _DNS_POLICIES))
    _validate_labels(errs, spec.get("nodeSelector"), _child(path, "nodeSelector"))
    _map(errs, spec.get("securityContext"), _child(path, "securityContext"))
    _validate_name_field(
        errs,
        spec.get("serviceAccountName"),
        _child(path, "serviceAccountName"),
        _name_is_dns_subdomain,
    )
    _validate_name_field(
        errs, spec.get("nodeName"), _child(path, "nodeName"), _name_is_dns_subdomain
    )
    deadline_path = _child(path, "activeDeadlineSeconds")
    deadline = _int(errs, spec.get("activeDeadlineSeconds"), deadline_path)
    if deadline is not None and not 1 <= deadline <= _MAX_INT32:
        errs.append(_invalid(deadline_path, deadline, _inclusive_range_error(1, _MAX_INT32)))
    for key in ("hostname", "subdomain"):
        text = _str(errs, spec.get(key), _child(path, key))
        if text:
            errs.extend(
                _invalid(_child(path, key), text, msg) for msg in dns1123_label_errors(text)
            )
    _validate_tolerations(errs, spec.get("tolerations"), _child(path, "tolerations"))
    _validate_name_field(
        errs,
        spec.get("priorityClassName"),
        _child(path, "priorityClassName"),
        _name_is_dns_subdomain,
    )
    _int(errs, spec.get("priority"), _child(path, "priority"))
    if spec.get("preemptionPolicy") is not None:
        _validate_preemption_policy(
            errs, spec.get("preemptionPolicy"), _child(path, "preemptionPolicy")
        )
    gates_path = _child(path, "schedulingGates")
    seen_gates: set[str] = set()
    for i, gate in enumerate(_maps(_list(errs, spec.get("schedulingGates"), gates_path))):
        gate_name = _str(errs, gate.get("name"), _child(_index(gates_path, i), "name"))
        errs.extend(
            _invalid(_index(gates_path, i), gate_name, msg)
            for msg in qualified_name_errors(gate_name)
        )
        if gate_name in seen_gates:
            errs.append(_duplicate(_index(gates_path, i), gate_name))
        seen_gates.add(gate_name)
    for key in ("hostNetwork", "hostPID", "hostIPC", "enableServiceLinks"):
        _bool(errs, spec.get(key), _child(path, key))
    if spec.get("resources") is not None:
        _validate_resource_requirements(errs, spec.get("resources"), _child(path, "resources"))
    if spec.get("overhead") is not None:
        _parse_resource_list(errs, spec.get("overhead"), _child(path, "overhead"))
    return spec


def _validate_preemption_policy(errs: list[FieldError], value: object, path: str) -> None:
    policy = _str(errs, value, path)
    if not policy:
        errs.append(_required(path))
    elif policy not in _PREEMPTION_POLICIES:
        errs.append(_not_supported(path, policy, _PREEMPTION_POLICIES))


# Our annotations (DESIGN.md), checked wherever a pod or a pod template carries them.
_MIRROR_POD_ANNOTATION: Final = "kubernetes.io/config.mirror"


def _validate_inplace_annotations(errs: list[FieldError], annotations: object, path: str) -> None:
    if not isinstance(annotations, Mapping):
        return
    policy = annotations.get(RESIZE_POLICY)
    if policy is not None and policy not in RESIZE_POLICIES:
        errs.append(_not_supported(_key(path, RESIZE_POLICY), policy, RESIZE_POLICIES))
    oom = annotations.get(OOM_KILL_DISABLE)
    if oom is not None and oom not in ("true", "false"):
        errs.append(_not_supported(_key(path, OOM_KILL_DISABLE), oom, ("true", "false")))


def _validate_pod_template(errs: list[FieldError], value: object, path: str) -> Mapping[str, Any]:
    """Upstream ``ValidatePodTemplateSpec``: labels at ``<path>.labels`` (sic), then the spec."""
    template = _map(errs, value, path)
    meta = _map(errs, template.get("metadata"), _child(path, "metadata"))
    _validate_labels(errs, meta.get("labels"), _child(path, "labels"))
    annotations = _validate_annotations(errs, meta.get("annotations"), _child(path, "annotations"))
    _validate_inplace_annotations(errs, annotations, _child(path, "annotations"))
    spec = _validate_pod_spec(errs, template.get("spec"), _child(path, "spec"))
    if spec.get("ephemeralContainers"):
        errs.append(
            _forbidden(
                _child(_child(path, "spec"), "ephemeralContainers"),
                "ephemeral containers not allowed in pod template",
            )
        )
    return template


# -- pods ----------------------------------------------------------------------------------------


def _validate_pod(errs: list[FieldError], pod: Mapping[str, Any], *, create: bool) -> None:
    """Upstream ``validatePodMetadataAndSpec`` plus, on create, ``ValidatePodCreate``'s rules."""
    meta = _validate_object_meta(errs, pod, namespaced=True, name_fn=_name_is_dns_subdomain)
    _validate_inplace_annotations(errs, meta.get("annotations"), "metadata.annotations")
    spec = _validate_pod_spec(errs, pod.get("spec"), "spec")
    for key in ("containers", "initContainers"):
        for i, container in enumerate(_maps(spec.get(key))):
            image = container.get("image")
            if isinstance(image, str) and image != image.strip():
                errs.append(
                    _invalid(
                        f"spec.{key}[{i}].image",
                        image,
                        "must not have leading or trailing whitespace",
                    )
                )
    if create:
        if spec.get("ephemeralContainers"):
            errs.append(_forbidden("spec.ephemeralContainers", "cannot be set on create"))
        if spec.get("nodeName") and spec.get("schedulingGates"):
            errs.append(
                _forbidden(
                    "spec.nodeName", "cannot be set until all schedulingGates have been cleared"
                )
            )


_UPDATABLE_POD_SPEC_FIELDS: Final = (
    "`spec.containers[*].image`",
    "`spec.initContainers[*].image`",
    "`spec.activeDeadlineSeconds`",
    "`spec.tolerations` (only additions to existing tolerations)",
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
)


def _validate_pod_update(
    errs: list[FieldError], new: Mapping[str, Any], old: Mapping[str, Any]
) -> None:
    """Upstream ``ValidatePodUpdate``: only images, the deadline, added tolerations (and
    removed scheduling gates) may change; resources change through ``pods/resize``."""
    _validate_object_meta_update(errs, new, old)
    new_spec, old_spec = _obj(new.get("spec")), _obj(old.get("spec"))
    if new_spec == old_spec:
        # The common update (labels, annotations, finalizers): the spec was validated when it
        # was stored, so only the metadata needs a look. Full validation cost more than the
        # rest of the write path together.
        meta = _validate_object_meta(errs, new, namespaced=True, name_fn=_name_is_dns_subdomain)
        _validate_inplace_annotations(errs, meta.get("annotations"), "metadata.annotations")
        return
    _validate_pod(errs, new, create=False)
    for key in ("containers", "initContainers"):
        new_cs, old_cs = _maps(new_spec.get(key)), _maps(old_spec.get(key))
        if len(new_cs) != len(old_cs):
            errs.append(_forbidden(f"spec.{key}", "pod updates may not add or remove containers"))
            return
    new_deadline, old_deadline = (
        new_spec.get("activeDeadlineSeconds"),
        old_spec.get("activeDeadlineSeconds"),
    )
    if isinstance(new_deadline, int) and not isinstance(new_deadline, bool):
        if not 0 <= new_deadline <= _MAX_INT32:
            errs.append(
                _invalid(
                    "spec.activeDeadlineSeconds",
                    new_deadline,
                    _inclusive_range_error(0, _MAX_INT32),
                )
            )
            return
        if _is_int(old_deadline) and old_deadline < new_deadline:  # type: ignore[operator]
            errs.append(
                _invalid(
                    "spec.activeDeadlineSeconds",
                    new_deadline,
                    "must be less than or equal to previous value",
                )
            )
            return
    elif new_deadline is None and old_deadline is not None:
        errs.append(
            _invalid(
                "spec.activeDeadlineSeconds",
                None,
                "must not update from a positive integer to nil value",
            )
        )
    _validate_only_added_tolerations(errs, new_spec.get("tolerations"), old_spec.get("tolerations"))
    old_gates = {
        g.get("name") for g in _maps(old_spec.get("schedulingGates")) if isinstance(g, Mapping)
    }
    for i, gate in enumerate(_maps(new_spec.get("schedulingGates"))):
        if gate.get("name") not in old_gates:
            errs.append(
                _forbidden(
                    f"spec.schedulingGates[{i}].name",
                    f"only deletion is allowed, but found new scheduling gate '{gate.get('name')}'",
                )
            )
    munged = copy.deepcopy(dict(new_spec))
    for key in ("containers", "initContainers"):
        containers = munged.get(key)
        if isinstance(containers, list):
            for i, container in enumerate(containers):
                old_container = _maps(old_spec.get(key))[i]
                if isinstance(container, dict):
                    container["image"] = old_container.get("image")
    for key in ("activeDeadlineSeconds", "schedulingGates", "tolerations"):
        munged[key] = old_spec.get(key)
    old_grace, new_grace = (
        old_spec.get("terminationGracePeriodSeconds"),
        munged.get("terminationGracePeriodSeconds"),
    )
    if _is_int(old_grace) and old_grace < 0 and new_grace == 1:  # type: ignore[operator]
        munged["terminationGracePeriodSeconds"] = old_grace
    changes: list[tuple[str, Any, Any]] = []
    _diff(_semantic(old_spec), _semantic(munged), "spec", changes)
    if changes:
        lines = "\n".join(f"{p}: {_render(o)} -> {_render(n)}" for p, o, n in changes)
        errs.append(
            _forbidden(
                "spec",
                "pod updates may not change fields other than "
                + ",".join(_UPDATABLE_POD_SPEC_FIELDS)
                + "\n"
                + lines,
            )
        )


def _validate_only_added_tolerations(errs: list[FieldError], new: object, old: object) -> None:
    new_list = [dict(t) for t in _maps(new)]
    for old_toleration in _maps(old):
        found = False
        for candidate in new_list:
            clone = dict(old_toleration)
            clone["tolerationSeconds"] = candidate.get("tolerationSeconds")
            if _semantic(clone) == _semantic(candidate):
                found = True
                break
        if not found:
            errs.append(
                _forbidden(
                    "spec.tolerations",
                    "existing toleration can not be modified except its tolerationSeconds",
                )
            )
            return


_SYSTEM_POD_CONDITIONS: Final = frozenset({"PodScheduled", "Ready", "Initialized"})


def _validate_pod_status_update(
    errs: list[FieldError], new: Mapping[str, Any], old: Mapping[str, Any]
) -> None:
    """Upstream ``ValidatePodStatusUpdate`` (condition paths under ``metadata``, sic)."""
    _validate_object_meta_update(errs, new, old)
    _validate_meta_common(errs, _map(errs, new.get("metadata"), "metadata"), "metadata")
    status = _map(errs, new.get("status"), "status")
    conditions = _list(errs, status.get("conditions"), "status.conditions")
    for i, condition in enumerate(_maps(conditions)):
        kind = _str(errs, condition.get("type"), f"status.conditions[{i}].type")
        if kind in _SYSTEM_POD_CONDITIONS:
            continue
        path = f"metadata.conditions[{i}].Type"
        errs.extend(_invalid(path, kind, msg) for msg in qualified_name_errors(kind))
    if _sub(new, "spec", "nodeName") != _sub(old, "spec", "nodeName"):
        errs.append(_forbidden("status.nodeName", "may not be changed directly"))
    nominated = status.get("nominatedNodeName")
    if nominated and nominated != _sub(old, "status", "nominatedNodeName"):
        _validate_name_field(errs, nominated, "status.nominatedNodeName", _name_is_dns_subdomain)
    new_qos, old_qos = status.get("qosClass"), _sub(old, "status", "qosClass")
    if (new_qos or "") != (old_qos or ""):
        errs.append(_invalid("status.qosClass", new_qos or "", _IMMUTABLE_MSG))


# -- pod resize (pods/resize) --------------------------------------------------------------------

_RESIZE_ONLY_MSG: Final = "only cpu and memory resources are mutable"
_RESIZE_ONLY_SIDECAR_MSG: Final = "only cpu and memory resources for sidecar containers are mutable"
_INIT_IMMUTABLE_MSG: Final = "resources for non-sidecar init containers are immutable"


def _resize_container(
    errs: list[FieldError],
    new: Mapping[str, Any],
    old: Mapping[str, Any],
    path: str,
    *,
    detail: str,
    allow_memory_limit_decrease: bool,
) -> None:
    """One container of a resize: only cpu/memory requests and limits (and the resize policy)
    may change, and none may be removed (upstream ``validateContainerResize``)."""
    for key in sorted({*new.keys(), *old.keys()} - {"resources", "resizePolicy"}):
        changes: list[tuple[str, Any, Any]] = []
        _diff(
            _semantic(old.get(key), key),
            _semantic(new.get(key), key),
            _child(path, key),
            changes,
            key,
        )
        errs.extend(_forbidden(p, detail) for p, _, _ in changes)
    res_path = _child(path, "resources")
    new_res, old_res = _obj(new.get("resources")), _obj(old.get("resources"))
    for key in sorted({*new_res.keys(), *old_res.keys()} - {"limits", "requests"}):
        changes = []
        _diff(
            _semantic(old_res.get(key), key),
            _semantic(new_res.get(key), key),
            _child(res_path, key),
            changes,
            key,
        )
        errs.extend(_forbidden(p, detail) for p, _, _ in changes)
    for section, noun in (("requests", "requests"), ("limits", "limits")):
        section_path = _child(res_path, section)
        new_list, old_list = _obj(new_res.get(section)), _obj(old_res.get(section))
        for name in sorted({*map(str, new_list.keys()), *map(str, old_list.keys())}):
            if name in (_CPU, _MEMORY):
                continue
            if _semantic_quantity(new_list.get(name)) != _semantic_quantity(old_list.get(name)):
                errs.append(_forbidden(_key(section_path, name), detail))
        if any(name not in new_list for name in old_list):
            errs.append(_forbidden(section_path, f"resource {noun} cannot be removed"))
    if allow_memory_limit_decrease:
        return
    memory_policy = ""
    for policy in _maps(new.get("resizePolicy")):
        if policy.get("resourceName") == _MEMORY:
            memory_policy = policy.get("restartPolicy") or ""
            break
    if memory_policy not in ("NotRequired", ""):
        return
    new_limit = _semantic_quantity(_sub(new_res, "limits", _MEMORY))
    old_limit = _semantic_quantity(_sub(old_res, "limits", _MEMORY))
    limit_path = _key(_child(res_path, "limits"), _MEMORY)
    if isinstance(new_limit, Quantity) and isinstance(old_limit, Quantity):
        if new_limit < old_limit:
            errs.append(
                _forbidden(
                    limit_path,
                    "memory limits cannot be decreased unless resizePolicy is RestartContainer",
                )
            )
    elif new_limit is not None and old_limit is None:
        errs.append(
            _forbidden(
                limit_path, "memory limits cannot be added unless resizePolicy is RestartContainer"
            )
        )


def _qos_view(pod: Mapping[str, Any]) -> dict[str, Any]:
    """Just the pod's parseable container resources, so computing its QoS cannot fail."""
    spec: dict[str, Any] = {}
    for key in ("containers", "initContainers"):
        containers = []
        for container in _maps(_sub(pod, "spec", key)):
            res: dict[str, Any] = {}
            for section in ("requests", "limits"):
                raw = _sub(container, "resources", section)
                if isinstance(raw, Mapping):
                    res[section] = {
                        str(k): str(q)
                        for k, v in raw.items()
                        if isinstance(q := _semantic_quantity(v), Quantity)
                    }
            containers.append({"resources": res, "restartPolicy": container.get("restartPolicy")})
        spec[key] = containers
    return {"spec": spec}


def _pod_level_resources_set(pod: Mapping[str, Any]) -> bool:
    res = _sub(pod, "spec", "resources")
    return isinstance(res, Mapping) and bool(res.get("requests") or res.get("limits"))


def _validate_resize(
    errs: list[FieldError],
    new: Mapping[str, Any],
    old: Mapping[str, Any],
    *,
    allow_memory_limit_decrease: bool,
) -> list[FieldError] | None:
    """Upstream ``ValidatePodResize`` (v1.33); returns a replacement error list for the cases
    upstream answers with a single error (pod-level resources, static and windows pods)."""
    _validate_object_meta_update(errs, new, old)
    _validate_pod(errs, new, create=False)
    if _pod_level_resources_set(old) or _pod_level_resources_set(new):
        return [_forbidden("", "pods with pod-level resources cannot be resized")]
    old_annotations = _sub(old, "metadata", "annotations")
    if isinstance(old_annotations, Mapping) and _MIRROR_POD_ANNOTATION in old_annotations:
        return [_forbidden("", "static pods cannot be resized")]
    if _sub(old, "spec", "os", "name") == "windows":
        return [_forbidden("", "windows pods cannot be resized")]
    for key in ("labels", "annotations"):
        changes: list[tuple[str, Any, Any]] = []
        _diff(
            _semantic(_sub(old, "metadata", key), key),
            _semantic(_sub(new, "metadata", key), key),
            f"metadata.{key}",
            changes,
            key,
        )
        if changes:
            errs.append(_forbidden(f"metadata.{key}", _RESIZE_ONLY_MSG))
    new_spec, old_spec = _obj(new.get("spec")), _obj(old.get("spec"))
    containers_ok = True
    for key in ("containers", "initContainers"):
        new_cs, old_cs = _maps(new_spec.get(key)), _maps(old_spec.get(key))
        if len(new_cs) != len(old_cs):
            errs.append(_forbidden(f"spec.{key}", "pod updates may not add or remove containers"))
            containers_ok = False
            continue
        for i, (new_c, old_c) in enumerate(zip(new_cs, old_cs, strict=True)):
            path = f"spec.{key}[{i}]"
            if key == "containers" or old_c.get("restartPolicy") == "Always":
                _resize_container(
                    errs,
                    new_c,
                    old_c,
                    path,
                    detail=_RESIZE_ONLY_MSG if key == "containers" else _RESIZE_ONLY_SIDECAR_MSG,
                    allow_memory_limit_decrease=allow_memory_limit_decrease,
                )
                continue
            for field in sorted({*new_c.keys(), *old_c.keys()}):
                changes = []
                _diff(
                    _semantic(old_c.get(field), field),
                    _semantic(new_c.get(field), field),
                    _child(path, field),
                    changes,
                    field,
                )
                if changes and field == "resources":
                    errs.append(_forbidden(_child(path, "resources"), _INIT_IMMUTABLE_MSG))
                elif changes:
                    errs.extend(_forbidden(p, _RESIZE_ONLY_MSG) for p, _, _ in changes)
    for field in sorted({*new_spec.keys(), *old_spec.keys()} - {"containers", "initContainers"}):
        changes = []
        _diff(
            _semantic(old_spec.get(field), field),
            _semantic(new_spec.get(field), field),
            f"spec.{field}",
            changes,
            field,
        )
        errs.extend(_forbidden(p, _RESIZE_ONLY_MSG) for p, _, _ in changes)
    if containers_ok:
        old_qos = _sub(old, "status", "qosClass")
        if not isinstance(old_qos, str) or not old_qos:
            old_qos = resources.qos_class(_qos_view(old))
        new_qos = resources.qos_class(_qos_view(new))
        if new_qos != old_qos:
            shown = _sub(new, "status", "qosClass")
            errs.append(
                _invalid(
                    "spec",
                    shown if isinstance(shown, str) else old_qos,
                    "Pod QOS Class may not change as a result of resizing",
                )
            )
    return None


# -- workloads -----------------------------------------------------------------------------------


def _validate_int_or_percent(errs: list[FieldError], value: object, path: str) -> None:
    """Upstream ``ValidatePositiveIntOrPercent`` and ``IsNotMoreThan100Percent``."""
    if isinstance(value, str):
        if not _PERCENT_RE.fullmatch(value):
            errs.append(
                _invalid(path, _Bare(value), _regex_error(_PERCENT_MSG, _PERCENT_FMT, "1%", "93%"))
            )
        elif int(value[:-1]) > 100:
            errs.append(_invalid(path, _Bare(value), "must not be greater than 100%"))
    elif isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            errs.append(_invalid(path, value, _NEGATIVE_MSG))
    else:
        errs.append(_invalid(path, value, "must be an integer or percentage (e.g '5%')"))


def _int_or_percent_is_zero(value: object) -> bool:
    if isinstance(value, str) and _PERCENT_RE.fullmatch(value):
        return int(value[:-1]) == 0
    return value == 0 and not isinstance(value, bool)


def _validate_replica_template(
    errs: list[FieldError], spec: Mapping[str, Any], *, kind: str
) -> None:
    """A Deployment's or ReplicaSet's selector and template (upstream
    ``ValidatePodTemplateSpecForReplicaSet``)."""
    selector_value = spec.get("selector")
    usable = False
    if selector_value is None:
        errs.append(_required("spec.selector"))
    else:
        usable = _validate_label_selector(errs, selector_value, "spec.selector")
        if isinstance(selector_value, Mapping) and _selector_is_empty(selector_value):
            errs.append(
                _invalid(
                    "spec.selector", selector_value, "empty selector is invalid for deployment"
                )
            )
            usable = False
    template = _validate_pod_template(errs, spec.get("template"), "spec.template")
    if usable and isinstance(selector_value, Mapping):
        labels = _template_labels(template)
        if not _selector_matches(selector_value, labels):
            errs.append(
                _invalid(
                    "spec.template.metadata.labels",
                    _GoStringMap(_sub(template, "metadata", "labels")),
                    "`selector` does not match template `labels`",
                )
            )
    restart = _sub(template, "spec", "restartPolicy")
    if isinstance(restart, str) and restart and restart != "Always":
        errs.append(_not_supported("spec.template.spec.restartPolicy", restart, ("Always",)))
    if _sub(template, "spec", "activeDeadlineSeconds") is not None:
        errs.append(
            _forbidden(
                "spec.template.spec.activeDeadlineSeconds",
                f"activeDeadlineSeconds in {kind} is not Supported",
            )
        )


def _validate_deployment(errs: list[FieldError], obj: Mapping[str, Any]) -> None:
    _validate_object_meta(errs, obj, namespaced=True, name_fn=_name_is_dns_subdomain)
    spec = _map(errs, obj.get("spec"), "spec")
    _nonnegative(errs, spec.get("replicas"), "spec.replicas")
    _validate_replica_template(errs, spec, kind="ReplicaSet")
    strategy = _map(errs, spec.get("strategy"), "spec.strategy")
    strategy_type = strategy.get("type")
    rolling = strategy.get("rollingUpdate")
    if strategy_type == "Recreate":
        if rolling is not None:
            errs.append(
                _forbidden(
                    "spec.strategy.rollingUpdate",
                    "may not be specified when strategy `type` is 'Recreate'",
                )
            )
    elif strategy_type == "RollingUpdate":
        if rolling is None:
            errs.append(
                _required(
                    "spec.strategy.rollingUpdate", "this should be defaulted and never be nil"
                )
            )
        else:
            rolling_map = _map(errs, rolling, "spec.strategy.rollingUpdate")
            unavailable = rolling_map.get("maxUnavailable")
            surge = rolling_map.get("maxSurge")
            _validate_int_or_percent(
                errs, unavailable, "spec.strategy.rollingUpdate.maxUnavailable"
            )
            _validate_int_or_percent(errs, surge, "spec.strategy.rollingUpdate.maxSurge")
            if _int_or_percent_is_zero(unavailable) and _int_or_percent_is_zero(surge):
                errs.append(
                    _invalid(
                        "spec.strategy.rollingUpdate.maxUnavailable",
                        _Bare(str(unavailable)),
                        "may not be 0 when `maxSurge` is 0",
                    )
                )
    else:
        errs.append(_not_supported("spec.strategy", strategy, ("Recreate", "RollingUpdate")))
    min_ready = _int(errs, spec.get("minReadySeconds"), "spec.minReadySeconds")
    _nonnegative(errs, spec.get("minReadySeconds"), "spec.minReadySeconds")
    _nonnegative(errs, spec.get("revisionHistoryLimit"), "spec.revisionHistoryLimit")
    deadline = _int(errs, spec.get("progressDeadlineSeconds"), "spec.progressDeadlineSeconds")
    if deadline is not None:
        if deadline < 0:
            errs.append(_invalid("spec.progressDeadlineSeconds", deadline, _NEGATIVE_MSG))
        if deadline <= (min_ready or 0):
            errs.append(
                _invalid(
                    "spec.progressDeadlineSeconds", deadline, "must be greater than minReadySeconds"
                )
            )
    _bool(errs, spec.get("paused"), "spec.paused")


def _validate_replica_set(errs: list[FieldError], obj: Mapping[str, Any]) -> None:
    _validate_object_meta(errs, obj, namespaced=True, name_fn=_name_is_dns_subdomain)
    spec = _map(errs, obj.get("spec"), "spec")
    _nonnegative(errs, spec.get("replicas"), "spec.replicas")
    _nonnegative(errs, spec.get("minReadySeconds"), "spec.minReadySeconds")
    _validate_replica_template(errs, spec, kind="ReplicaSet")


def _validate_selector_update(
    errs: list[FieldError], new: Mapping[str, Any], old: Mapping[str, Any]
) -> None:
    new_sel, old_sel = _sub(new, "spec", "selector"), _sub(old, "spec", "selector")
    if _semantic(new_sel) != _semantic(old_sel):
        errs.append(_invalid("spec.selector", new_sel, _IMMUTABLE_MSG))


_COMPLETION_MODES: Final = ("NonIndexed", "Indexed")
_POD_REPLACEMENT_POLICIES: Final = ("TerminatingOrFailed", "Failed")


def _validate_job(errs: list[FieldError], obj: Mapping[str, Any]) -> None:
    """Upstream ``ValidateJob``. The selector may be absent on input: the job strategy
    generates it from the uid (see ``apply_defaults``)."""
    _validate_object_meta(errs, obj, namespaced=True, name_fn=_name_is_dns_subdomain)
    spec = _map(errs, obj.get("spec"), "spec")
    for key in (
        "parallelism",
        "completions",
        "activeDeadlineSeconds",
        "backoffLimit",
        "ttlSecondsAfterFinished",
        "backoffLimitPerIndex",
        "maxFailedIndexes",
    ):
        _nonnegative(errs, spec.get(key), f"spec.{key}")
    for key in ("suspend", "manualSelector"):
        _bool(errs, spec.get(key), f"spec.{key}")
    mode = spec.get("completionMode")
    if mode is not None:
        if mode not in _COMPLETION_MODES:
            errs.append(_not_supported("spec.completionMode", mode, _COMPLETION_MODES))
        elif mode == "Indexed" and spec.get("completions") is None:
            errs.append(_required("spec.completions", "when completion mode is Indexed"))
    replacement = spec.get("podReplacementPolicy")
    if replacement is not None and replacement not in _POD_REPLACEMENT_POLICIES:
        errs.append(
            _not_supported("spec.podReplacementPolicy", replacement, _POD_REPLACEMENT_POLICIES)
        )
    template = _validate_pod_template(errs, spec.get("template"), "spec.template")
    restart = _sub(template, "spec", "restartPolicy")
    if restart not in ("OnFailure", "Never"):
        errs.append(
            _not_supported(
                "spec.template.spec.restartPolicy",
                restart if isinstance(restart, str) else "",
                ("OnFailure", "Never"),
            )
        )
    selector = spec.get("selector")
    if selector is None:
        if spec.get("manualSelector") is True:
            errs.append(_required("spec.selector"))
    else:
        usable = _validate_label_selector(errs, selector, "spec.selector")
        if (
            usable
            and isinstance(selector, Mapping)
            and not _selector_matches(selector, _template_labels(template))
        ):
            errs.append(
                _invalid(
                    "spec.template.metadata.labels",
                    _GoStringMap(_sub(template, "metadata", "labels")),
                    "`selector` does not match template `labels`",
                )
            )


def _job_template_without_resources(template: object, old_template: object) -> Any:
    """`template` with each container's resources replaced by the old ones (matched by
    index), so that comparing it with the old template ignores resource changes."""
    munged = copy.deepcopy(template)
    for key in ("containers", "initContainers"):
        new_cs = _sub(munged, "spec", key)
        old_cs = _maps(_sub(old_template, "spec", key))
        if isinstance(new_cs, list) and len(new_cs) == len(old_cs):
            for container, old_container in zip(new_cs, old_cs, strict=True):
                if isinstance(container, dict):
                    container["resources"] = old_container.get("resources")
    return munged


def _validate_job_update(
    errs: list[FieldError], new: Mapping[str, Any], old: Mapping[str, Any]
) -> None:
    _validate_selector_update(errs, new, old)
    for key in ("completions", "completionMode"):
        new_value, old_value = _sub(new, "spec", key), _sub(old, "spec", key)
        if _semantic(new_value) != _semantic(old_value):
            errs.append(_invalid(f"spec.{key}", new_value, _IMMUTABLE_MSG))
    new_template, old_template = _sub(new, "spec", "template"), _sub(old, "spec", "template")
    munged = _job_template_without_resources(new_template, old_template)
    if _semantic(munged) != _semantic(old_template):
        errs.append(_invalid("spec.template", new_template, _IMMUTABLE_MSG))


_UNHEALTHY_POD_EVICTION_POLICIES: Final = ("AlwaysAllow", "IfHealthyBudget")


def _validate_pdb(errs: list[FieldError], obj: Mapping[str, Any]) -> None:
    """Upstream ``ValidatePodDisruptionBudget`` (policy/v1): at most one of minAvailable and
    maxUnavailable, each an integer or a percentage."""
    _validate_object_meta(errs, obj, namespaced=True, name_fn=_name_is_dns_subdomain)
    spec = _map(errs, obj.get("spec"), "spec")
    min_available, max_unavailable = spec.get("minAvailable"), spec.get("maxUnavailable")
    if min_available is not None and max_unavailable is not None:
        errs.append(_invalid("spec", spec, "minAvailable and maxUnavailable cannot be both set"))
    if min_available is not None:
        _validate_int_or_percent(errs, min_available, "spec.minAvailable")
    if max_unavailable is not None:
        _validate_int_or_percent(errs, max_unavailable, "spec.maxUnavailable")
    if spec.get("selector") is not None:
        _validate_label_selector(errs, spec.get("selector"), "spec.selector")
    policy = spec.get("unhealthyPodEvictionPolicy")
    if policy is not None and policy not in _UNHEALTHY_POD_EVICTION_POLICIES:
        errs.append(
            _not_supported(
                "spec.unhealthyPodEvictionPolicy", policy, _UNHEALTHY_POD_EVICTION_POLICIES
            )
        )


def _validate_pdb_status(errs: list[FieldError], obj: Mapping[str, Any]) -> None:
    status = _map(errs, obj.get("status"), "status")
    for key in ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods"):
        _nonnegative(errs, status.get(key), f"status.{key}")


# -- other kinds ---------------------------------------------------------------------------------

_HIGHEST_USER_PRIORITY: Final = 1_000_000_000
_SYSTEM_PRIORITY_CLASSES: Final = {
    "system-node-critical": 2_000_001_000,
    "system-cluster-critical": 2_000_000_000,
}


def _validate_priority_class(errs: list[FieldError], obj: Mapping[str, Any]) -> None:
    """Upstream ``ValidatePriorityClass``: user classes at most 1e9, ``system-`` reserved."""
    meta = _validate_object_meta(errs, obj, namespaced=False, name_fn=_name_is_dns_subdomain)
    raw_name = meta.get("name")
    name = raw_name if isinstance(raw_name, str) else ""
    value = _int(errs, obj.get("value"), "value")
    global_default = obj.get("globalDefault")
    _bool(errs, global_default, "globalDefault")
    if name.startswith("system-"):
        problem = ""
        if name not in _SYSTEM_PRIORITY_CLASSES:
            problem = f"{name} is not a known system priority class"
        elif value != _SYSTEM_PRIORITY_CLASSES[name]:
            problem = f"value of {name} PriorityClass must be {_SYSTEM_PRIORITY_CLASSES[name]}"
        elif global_default is True:
            problem = f"globalDefault of {name} PriorityClass must be false"
        if problem:
            errs.append(
                _forbidden(
                    "metadata.name",
                    "priority class names with 'system-' prefix are reserved for system use only. "
                    f"error: {problem}",
                )
            )
    elif value is not None and value > _HIGHEST_USER_PRIORITY:
        errs.append(
            _forbidden(
                "value",
                f"maximum allowed value of a user defined priority is {_HIGHEST_USER_PRIORITY}",
            )
        )
    if obj.get("preemptionPolicy") is not None:
        _validate_preemption_policy(errs, obj.get("preemptionPolicy"), "preemptionPolicy")


def _validate_priority_class_update(
    errs: list[FieldError], new: Mapping[str, Any], old: Mapping[str, Any]
) -> None:
    if _semantic(new.get("value")) != _semantic(old.get("value")):
        errs.append(_forbidden("value", "may not be changed in an update."))
    if _semantic(new.get("preemptionPolicy")) != _semantic(old.get("preemptionPolicy")):
        errs.append(_invalid("preemptionPolicy", new.get("preemptionPolicy"), _IMMUTABLE_MSG))


def _validate_lease(errs: list[FieldError], obj: Mapping[str, Any]) -> None:
    _validate_object_meta(errs, obj, namespaced=True, name_fn=_name_is_dns_subdomain)
    spec = _map(errs, obj.get("spec"), "spec")
    duration = _int(errs, spec.get("leaseDurationSeconds"), "spec.leaseDurationSeconds")
    if duration is not None and duration <= 0:
        errs.append(_invalid("spec.leaseDurationSeconds", duration, "must be greater than 0"))
    transitions = _int(errs, spec.get("leaseTransitions"), "spec.leaseTransitions")
    if transitions is not None and transitions < 0:
        errs.append(_invalid("spec.leaseTransitions", transitions, _NEGATIVE_MSG))
    _str(errs, spec.get("holderIdentity"), "spec.holderIdentity")


def _validate_event(errs: list[FieldError], obj: Mapping[str, Any]) -> None:
    """Upstream ``legacyValidateEvent`` (core/v1), plus a required ``involvedObject`` (ours)."""
    meta = _validate_object_meta(errs, obj, namespaced=True, name_fn=_name_is_dns_subdomain)
    namespace = meta.get("namespace") if isinstance(meta.get("namespace"), str) else ""
    involved = obj.get("involvedObject")
    if not involved:
        errs.append(_required("involvedObject"))
    involved_map = _map(errs, involved, "involvedObject")
    involved_ns = _str(errs, involved_map.get("namespace"), "involvedObject.namespace")
    if not obj.get("eventTime"):
        if not involved_ns:
            if namespace not in ("", "default"):
                errs.append(
                    _invalid(
                        "involvedObject.namespace", involved_ns, "does not match event.namespace"
                    )
                )
        elif namespace != involved_ns:
            errs.append(
                _invalid("involvedObject.namespace", involved_ns, "does not match event.namespace")
            )
    else:
        if not involved_ns and namespace not in ("default", "kube-system"):
            errs.append(
                _invalid("involvedObject.namespace", involved_ns, "does not match event.namespace")
            )
        for key in ("reportingComponent", "reportingInstance", "action", "reason"):
            if not obj.get(key):
                errs.append(_required(key))
    event_type = obj.get("type")
    if event_type not in (None, "", "Normal", "Warning"):
        errs.append(_not_supported("type", event_type, ("Normal", "Warning")))
    _int(errs, obj.get("count"), "count")


def _validate_namespace(errs: list[FieldError], obj: Mapping[str, Any]) -> None:
    _validate_object_meta(errs, obj, namespaced=False, name_fn=_name_is_dns_label)
    spec = _map(errs, obj.get("spec"), "spec")
    for i, finalizer in enumerate(_list(errs, spec.get("finalizers"), "spec.finalizers")):
        text = _str(errs, finalizer, f"spec.finalizers[{i}]")
        errs.extend(_invalid("spec.finalizers", text, msg) for msg in qualified_name_errors(text))
        if "/" not in text and text not in _STANDARD_FINALIZERS:
            errs.append(
                _invalid(
                    "spec.finalizers",
                    text,
                    "name is neither a standard finalizer name nor is it fully qualified",
                )
            )


def _validate_namespace_status(errs: list[FieldError], obj: Mapping[str, Any]) -> None:
    phase = _sub(obj, "status", "phase")
    if not _sub(obj, "metadata", "deletionTimestamp"):
        if phase != "Active":
            errs.append(
                _invalid(
                    "status.Phase", phase, "may only be 'Active' if `deletionTimestamp` is empty"
                )
            )
    elif phase != "Terminating":
        errs.append(
            _invalid(
                "status.Phase",
                phase,
                "may only be 'Terminating' if `deletionTimestamp` is not empty",
            )
        )


def _validate_node(errs: list[FieldError], obj: Mapping[str, Any]) -> None:
    """Upstream ``ValidateNode``: name, taints (at ``metadata.taints``, sic), resources."""
    _validate_object_meta(errs, obj, namespaced=False, name_fn=_name_is_dns_subdomain)
    spec = _map(errs, obj.get("spec"), "spec")
    seen: set[tuple[str, str]] = set()
    for i, taint in enumerate(_maps(_list(errs, spec.get("taints"), "spec.taints"))):
        idx = f"metadata.taints[{i}]"
        key = _str(errs, taint.get("key"), _child(idx, "key"))
        errs.extend(_invalid(_child(idx, "key"), key, msg) for msg in qualified_name_errors(key))
        value = _str(errs, taint.get("value"), _child(idx, "value"))
        msgs = label_value_errors(value)
        if msgs:
            errs.append(_invalid(_child(idx, "value"), value, ";".join(msgs)))
        effect = _str(errs, taint.get("effect"), _child(idx, "effect"))
        if not effect:
            errs.append(_required(_child(idx, "effect")))
        elif effect not in _TAINT_EFFECTS:
            errs.append(_not_supported(_child(idx, "effect"), effect, _TAINT_EFFECTS))
        if (effect, key) in seen:
            errs.append(
                FieldError(DUPLICATE, idx, "taints must be unique by key and effect pair", taint)
            )
        seen.add((effect, key))
    _bool(errs, spec.get("unschedulable"), "spec.unschedulable")
    _validate_node_resources(errs, obj)


def _validate_node_resources(errs: list[FieldError], obj: Mapping[str, Any]) -> None:
    status = _map(errs, obj.get("status"), "status")
    for section in ("capacity", "allocatable"):
        for name, raw in _map(errs, status.get(section), f"status.{section}").items():
            path = f"status.{section}.{name}"
            q = _parse_quantity(errs, raw, path)
            if q is not None:
                _quantity_value_checks(errs, str(name), q, path)


_VPA_UPDATE_MODES: Final = ("Off", "Initial", "Recreate", "InPlaceOrRecreate", "InPlace", "Auto")
_VPA_CONTAINER_MODES: Final = ("Auto", "Off")
_VPA_CONTROLLED_VALUES: Final = ("RequestsAndLimits", "RequestsOnly")


def _validate_vpa(errs: list[FieldError], obj: Mapping[str, Any]) -> None:
    """The VerticalPodAutoscaler CRD's schema enums and the VPA admission webhook's checks."""
    _validate_object_meta(errs, obj, namespaced=True, name_fn=_name_is_dns_subdomain)
    spec = _map(errs, obj.get("spec"), "spec")
    target = spec.get("targetRef")
    if target is None:
        errs.append(_required("spec.targetRef"))
    else:
        target_map = _map(errs, target, "spec.targetRef")
        for key in ("kind", "name"):
            if not _str(errs, target_map.get(key), f"spec.targetRef.{key}"):
                errs.append(_required(f"spec.targetRef.{key}"))
        _str(errs, target_map.get("apiVersion"), "spec.targetRef.apiVersion")
    policy = _map(errs, spec.get("updatePolicy"), "spec.updatePolicy")
    mode = policy.get("updateMode")
    if mode is not None and mode not in _VPA_UPDATE_MODES:
        errs.append(_not_supported("spec.updatePolicy.updateMode", mode, _VPA_UPDATE_MODES))
    min_replicas = _int(errs, policy.get("minReplicas"), "spec.updatePolicy.minReplicas")
    if min_replicas is not None and min_replicas <= 0:
        errs.append(
            _invalid("spec.updatePolicy.minReplicas", min_replicas, "must be greater than 0")
        )
    resource_policy = _map(errs, spec.get("resourcePolicy"), "spec.resourcePolicy")
    policies_path = "spec.resourcePolicy.containerPolicies"
    names: set[str] = set()
    for i, container in enumerate(
        _maps(_list(errs, resource_policy.get("containerPolicies"), policies_path))
    ):
        idx = _index(policies_path, i)
        name = _str(errs, container.get("containerName"), _child(idx, "containerName"))
        if not name:
            errs.append(_required(_child(idx, "containerName")))
        elif name in names:
            errs.append(_duplicate(_child(idx, "containerName"), name))
        names.add(name)
        container_mode = container.get("mode")
        if container_mode is not None and container_mode not in _VPA_CONTAINER_MODES:
            errs.append(_not_supported(_child(idx, "mode"), container_mode, _VPA_CONTAINER_MODES))
        controlled = container.get("controlledValues")
        if controlled is not None and controlled not in _VPA_CONTROLLED_VALUES:
            errs.append(
                _not_supported(_child(idx, "controlledValues"), controlled, _VPA_CONTROLLED_VALUES)
            )
        res_path = _child(idx, "controlledResources")
        for j, resource in enumerate(_list(errs, container.get("controlledResources"), res_path)):
            if resource not in _RESIZE_RESOURCES:
                errs.append(_not_supported(_index(res_path, j), resource, _RESIZE_RESOURCES))
        minimum = _parse_resource_list(errs, container.get("minAllowed"), _child(idx, "minAllowed"))
        maximum = _parse_resource_list(errs, container.get("maxAllowed"), _child(idx, "maxAllowed"))
        for resource, high in maximum.items():
            low = minimum.get(resource)
            if low is not None and high < low:
                errs.append(
                    _invalid(
                        _key(_child(idx, "maxAllowed"), resource),
                        str(high),
                        f"max resource for {resource} is lower than min ({low})",
                    )
                )


def _validate_deployment_status(errs: list[FieldError], obj: Mapping[str, Any]) -> None:
    status = _map(errs, obj.get("status"), "status")
    for key in (
        "replicas",
        "updatedReplicas",
        "readyReplicas",
        "availableReplicas",
        "unavailableReplicas",
        "fullyLabeledReplicas",
        "observedGeneration",
        "collisionCount",
        "terminatingReplicas",
    ):
        _nonnegative(errs, status.get(key), f"status.{key}")


def _validate_job_status(errs: list[FieldError], obj: Mapping[str, Any]) -> None:
    status = _map(errs, obj.get("status"), "status")
    for key in ("active", "succeeded", "failed", "ready", "terminating"):
        _nonnegative(errs, status.get(key), f"status.{key}")


def _validate_generic(errs: list[FieldError], obj: Mapping[str, Any], kind: Kind) -> None:
    """Kinds with no rules of their own: metadata only."""
    _validate_object_meta(errs, obj, namespaced=kind.namespaced, name_fn=_name_is_dns_subdomain)


_Validator = Callable[[list[FieldError], Mapping[str, Any]], None]
_UpdateValidator = Callable[[list[FieldError], Mapping[str, Any], Mapping[str, Any]], None]

_CREATE: Final[dict[tuple[str, str], _Validator]] = {
    ("", "Namespace"): _validate_namespace,
    ("", "Node"): _validate_node,
    ("", "Event"): _validate_event,
    ("apps", "Deployment"): _validate_deployment,
    ("apps", "ReplicaSet"): _validate_replica_set,
    ("batch", "Job"): _validate_job,
    ("policy", "PodDisruptionBudget"): _validate_pdb,
    ("scheduling.k8s.io", "PriorityClass"): _validate_priority_class,
    ("coordination.k8s.io", "Lease"): _validate_lease,
    ("autoscaling.k8s.io", "VerticalPodAutoscaler"): _validate_vpa,
}
_UPDATE: Final[dict[tuple[str, str], _UpdateValidator]] = {
    ("apps", "Deployment"): _validate_selector_update,
    ("apps", "ReplicaSet"): _validate_selector_update,
    ("batch", "Job"): _validate_job_update,
    ("scheduling.k8s.io", "PriorityClass"): _validate_priority_class_update,
}
_STATUS: Final[dict[tuple[str, str], _Validator]] = {
    ("", "Namespace"): _validate_namespace_status,
    ("", "Node"): _validate_node_resources,
    ("apps", "Deployment"): _validate_deployment_status,
    ("apps", "ReplicaSet"): _validate_deployment_status,
    ("batch", "Job"): _validate_job_status,
    ("policy", "PodDisruptionBudget"): _validate_pdb_status,
}


# -- semantic equality and diffs -----------------------------------------------------------------

# Objects whose keys are data (label names, resource names), shown as ``[key]`` in paths.
_MAP_FIELDS: Final = frozenset(
    {
        "labels",
        "annotations",
        "nodeSelector",
        "matchLabels",
        "limits",
        "requests",
        "overhead",
        "capacity",
        "allocatable",
        "allocatedResources",
        "minAllowed",
        "maxAllowed",
    }
)
_QUANTITY_MAPS: Final = frozenset(
    {"limits", "requests", "overhead", "capacity", "allocatable", "minAllowed", "maxAllowed"}
)


def _semantic_quantity(value: object) -> object:
    """A quantity compared by value (``"1000m" == "1"``); an unparseable one as itself."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return value
    try:
        return Quantity.from_json(value)
    except (QuantityError, ValueError, OverflowError, ArithmeticError):
        return value


def _is_zero(value: object) -> bool:
    return value is None or value is False or value == "" or value == [] or value == {}


def _semantic(value: object, key: str | None = None) -> Any:
    """`value` normalised as upstream's ``Semantic.DeepEqual`` compares Go structs: absent,
    null and zero values are the same, quantities compare by value."""
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for k, v in value.items():
            k = str(k)
            nv = _semantic_quantity(v) if key in _QUANTITY_MAPS else _semantic(v, k)
            if key in _MAP_FIELDS or not _is_zero(nv):
                out[k] = nv
        return out
    if isinstance(value, list | tuple):
        return [_semantic(v) for v in value]
    return value


def _diff(old: Any, new: Any, path: str, out: list[tuple[str, Any, Any]], key: str = "") -> None:
    """Append ``(path, old, new)`` for every leaf that differs between two semantic values."""
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        for k in sorted({*old.keys(), *new.keys()}):
            child = _key(path, k) if key in _MAP_FIELDS else _child(path, k)
            _diff(old.get(k), new.get(k), child, out, k)
    elif isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for i, (o, n) in enumerate(zip(old, new, strict=True)):
            _diff(o, n, _index(path, i), out)
    elif old != new and not (_is_zero(old) and _is_zero(new)):
        out.append((path, old, new))


# -- public entry points -------------------------------------------------------------------------


def _raise(kind: Kind, obj: object, errs: list[FieldError]) -> None:
    if errs:
        raise ValidationError(kind.kind, _object_name(obj), errs, group=kind.group)


def _guarded(errs: list[FieldError], run: Callable[[], None]) -> None:
    """Run a validator; JSON nested deeper than Python's recursion allows is an error of the
    object, not of the server."""
    try:
        run()
    except RecursionError:
        errs.append(_invalid("", _Bare("<object>"), "object is nested too deeply"))


def _require_object(errs: list[FieldError], obj: object) -> bool:
    if isinstance(obj, Mapping):
        return True
    errs.append(_type_invalid("", obj, "object"))
    return False


def _validate(kind: Kind, errs: list[FieldError], obj: Mapping[str, Any], *, create: bool) -> None:
    key = (kind.group, kind.kind)
    if key == ("", "Pod"):
        _validate_pod(errs, obj, create=create)
    elif key in _CREATE:
        _CREATE[key](errs, obj)
    else:
        _validate_generic(errs, obj, kind)


def validate_create(kind: Kind, obj: Mapping[str, Any], *, namespace: str | None = None) -> None:
    """Validate a new object (after defaulting); raise :class:`ValidationError` listing every
    bad field. `namespace`, when given, is the request's: the object's must agree."""
    errs: list[FieldError] = []
    if _require_object(errs, obj):
        _guarded(errs, lambda: _validate(kind, errs, obj, create=True))
        object_ns = _sub(obj, "metadata", "namespace")
        if namespace is not None and object_ns and object_ns != namespace:
            errs.append(
                _invalid(
                    "metadata.namespace",
                    object_ns,
                    "the namespace of the provided object does not match the namespace sent on "
                    "the request",
                )
            )
    _raise(kind, obj, errs)


def validate_update(kind: Kind, new: Mapping[str, Any], old: Mapping[str, Any]) -> None:
    """Validate an update of `old` to `new`: `new` is valid and changes only mutable fields."""
    errs: list[FieldError] = []
    if _require_object(errs, new) and isinstance(old, Mapping):

        def run() -> None:
            key = (kind.group, kind.kind)
            if key == ("", "Pod"):
                _validate_pod_update(errs, new, old)
                return
            _validate_object_meta_update(errs, new, old)
            _validate(kind, errs, new, create=False)
            if key in _UPDATE:
                _UPDATE[key](errs, new, old)

        _guarded(errs, run)
    _raise(kind, new, errs)


def validate_status_update(kind: Kind, new: Mapping[str, Any], old: Mapping[str, Any]) -> None:
    """Validate a write to the ``status`` subresource (the spec is the old one's)."""
    errs: list[FieldError] = []
    if _require_object(errs, new) and isinstance(old, Mapping):

        def run() -> None:
            key = (kind.group, kind.kind)
            if key == ("", "Pod"):
                _validate_pod_status_update(errs, new, old)
                return
            _validate_object_meta_update(errs, new, old)
            _validate_meta_common(errs, _map(errs, new.get("metadata"), "metadata"), "metadata")
            if key in _STATUS:
                _STATUS[key](errs, new)

        _guarded(errs, run)
    _raise(kind, new, errs)


_POD_KIND: Final = Kind("", "v1", "Pod", "pods", True)


def validate_resize(
    new: Mapping[str, Any],
    old: Mapping[str, Any],
    *,
    allow_memory_limit_decrease: bool = True,
) -> None:
    """Validate a write to ``pods/NAME/resize`` (upstream ``ValidatePodResize``, v1.33).

    Only the cpu and memory requests and limits of containers and sidecars, and their
    ``resizePolicy``, may change; nothing may be removed; the QoS class must stay; the new
    pod must be valid (requests <= limits, ``NotRequired`` policies for ``restartPolicy:
    Never`` pods). Memory limit decreases are allowed (v1.34) unless
    `allow_memory_limit_decrease` is False (v1.33: only with ``RestartContainer``).
    """
    errs: list[FieldError] = []
    if _require_object(errs, new) and isinstance(old, Mapping):
        replacement: list[list[FieldError]] = []

        def run() -> None:
            result = _validate_resize(
                errs, new, old, allow_memory_limit_decrease=allow_memory_limit_decrease
            )
            if result is not None:
                replacement.append(result)

        _guarded(errs, run)
        if replacement:
            errs = replacement[0]
    _raise(_POD_KIND, new, errs)
