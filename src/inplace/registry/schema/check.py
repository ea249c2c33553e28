"""The unknown-field / wrong-type check every write runs, in upstream's wording.

It must be cheap (it runs on every write), so each struct keeps a per-field table of
precomputed entries and the walk decides the common case (a scalar of the right type) inline.

* Unknown fields are paths in the format of upstream's strict decoder: dotted JSON field names
  from the object root, no leading dot, list indices in brackets, e.g.
  `spec.template.spec.containers[1].imagePullPolicyy`. Upstream turns them into
  ``Pod in version "v1" cannot be handled as a Pod: strict decoding error: unknown field
  "spec.containers[0].imagePullPolicyy", unknown field "…"`` (400 BadRequest) under
  `fieldValidation=Strict`, and into one ``Warning: unknown field "…"`` header each under `Warn`
  (see `strict_decoding_error` and `unknown_field_warnings`). A field that is unknown is reported
  once; what is inside it is not examined.
* Type errors of built-in kinds use encoding/json's wording, which upstream returns as a 400
  (``json: cannot unmarshal string into Go struct field ContainerPort.spec.containers.ports.
  containerPort of type int32``): the Go struct that holds the field, then the field's path
  without list indices. For the VerticalPodAutoscaler (a CRD upstream) they use the CRD
  validator's wording, which upstream returns as a 422 Invalid (``spec.updatePolicy.minReplicas:
  Invalid value: "string": spec.updatePolicy.minReplicas in body must be of type integer:
  "string"``).
* `null` is accepted anywhere (it decodes to the zero value upstream); int-or-string fields take
  ints and strings; quantities take strings and numbers; free-form fields (RawExtension,
  FieldsV1, CRD `x-kubernetes-preserve-unknown-fields`) take anything. Whether a quantity string
  parses, enums, and required fields are validation's business, not this module's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from inplace.registry.godecode import base64_error
from inplace.registry.kinds import Kind
from inplace.registry.schema.roots import kind_schema
from inplace.registry.schema.types import Struct, Tag, Type


@dataclass(frozen=True)
class FieldReport:
    """What `check_fields` found: unknown field paths and wrong-type messages, in object order."""

    unknown: list[str]
    type_errors: list[str]

    @property
    def ok(self) -> bool:
        return not self.unknown and not self.type_errors


#: Python type of a decoded JSON value -> the word encoding/json uses for it.
_GO_VALUE: Final = {
    str: "string",
    int: "number",
    float: "number",
    bool: "bool",
    list: "array",
    dict: "object",
}
#: ... and the word the CRD validator uses.
_CRD_VALUE: Final = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    list: "array",
    dict: "object",
}
_ACCEPTS: Final[dict[Tag, frozenset[type]]] = {
    Tag.STRING: frozenset({str}),
    Tag.BYTES: frozenset({str}),
    Tag.INT32: frozenset({int}),
    Tag.INT64: frozenset({int}),
    Tag.NUMBER: frozenset({int, float}),
    Tag.BOOL: frozenset({bool}),
    Tag.TIME: frozenset({str}),
    Tag.MICRO_TIME: frozenset({str}),
    Tag.QUANTITY: frozenset({str, int, float}),
    Tag.INT_OR_STRING: frozenset({str, int}),
}
_CRD_TYPE_WORD: Final = {
    Tag.STRING: "string",
    Tag.TIME: "string",
    Tag.INT32: "integer",
    Tag.INT64: "integer",
    Tag.NUMBER: "number",
    Tag.BOOL: "boolean",
    Tag.INT_OR_STRING: "integer or string",
    Tag.LIST: "array",
    Tag.MAP: "object",
    Tag.STRUCT: "object",
}


def _json_type(value: Any) -> type:
    """The plain JSON type of a decoded value (subclasses folded; bool kept apart from int)."""
    t = type(value)
    if t in _GO_VALUE:
        return t
    for base in (bool, str, int, float, list, dict):
        if isinstance(value, base):
            return base
    if isinstance(value, Mapping):
        return dict
    return list


def go_type(t: Type) -> str:
    """The Go type name upstream's decode errors print for `t` ("[]v1.Container")."""
    tag = t.tag
    if tag is Tag.STRUCT:
        assert t.struct is not None
        package = t.struct.name.rsplit(".", 2)
        return f"{package[-2]}.{t.struct.go_name}" if len(package) == 3 else t.struct.go_name
    if tag is Tag.LIST:
        assert t.elem is not None
        return f"[]{go_type(t.elem)}"
    if tag is Tag.MAP:
        assert t.elem is not None
        if t.elem.tag is Tag.QUANTITY:
            return "v1.ResourceList"
        return f"map[string]{go_type(t.elem)}"
    return _GO_SCALARS[tag]


_GO_SCALARS: Final = {
    Tag.STRING: "string",
    Tag.BYTES: "[]uint8",
    Tag.INT32: "int32",
    Tag.INT64: "int64",
    Tag.NUMBER: "float64",
    Tag.BOOL: "bool",
    Tag.TIME: "v1.Time",
    Tag.MICRO_TIME: "v1.MicroTime",
    Tag.QUANTITY: "resource.Quantity",
    Tag.INT_OR_STRING: "intstr.IntOrString",
    Tag.ANY: "runtime.RawExtension",
}


#: How a field is checked: a scalar against a set of Python types, or a container walk.
_SCALAR, _STRUCT, _LIST, _MAP, _ANY = range(5)
#: (accepted Python types or None, walk code, type, int limit or 0, element entry or None)
_Entry = tuple[frozenset[type] | None, int, Type, int, Any]
_INT_LIMIT: Final = {Tag.INT32: 2**31, Tag.INT64: 2**63}


def _entry(t: Type) -> _Entry:
    """Precomputed check of one type, so the walk decides the common case without a call."""
    tag = t.tag
    if tag is Tag.STRUCT:
        return (None, _STRUCT, t, 0, None)
    if tag is Tag.LIST or tag is Tag.MAP:
        assert t.elem is not None
        return (None, _LIST if tag is Tag.LIST else _MAP, t, 0, _entry(t.elem))
    if tag is Tag.ANY:
        return (None, _ANY, t, 0, None)
    if tag is Tag.BYTES:  # every value takes the slow path: base64 is checked there
        return (frozenset(), _SCALAR, t, 0, None)
    return (_ACCEPTS[tag], _SCALAR, t, _INT_LIMIT.get(tag, 0), None)


def _table(st: Struct) -> dict[str, _Entry]:
    """The struct's per-field entries, kept on the struct (built once, on first use)."""
    if st.table is None:
        st.table = {name: _entry(f.type) for name, f in st.fields.items()}
    return st.table


class _Checker:
    """One walk over one object. `path` is the strict-decoding path (with indices) ending in
    '.', or ''; `gopath` is the same without indices, for encoding/json's messages. The common
    case (a scalar of the right type) is decided inline, without a call."""

    __slots__ = ("crd", "errors", "unknown")

    def __init__(self, crd: bool) -> None:
        self.crd = crd
        self.unknown: list[str] = []
        self.errors: list[str] = []

    def struct(self, st: Struct, obj: Mapping[str, Any], path: str, gopath: str) -> None:
        table = st.table or _table(st)
        for key, value in obj.items():
            entry = table.get(key)
            if entry is None:
                if not st.preserve_unknown:
                    self.unknown.append(path + key)
                continue
            if value is None:
                continue
            accepts, code, t, limit, sub = entry
            if accepts is not None:
                vt = type(value)
                if vt in accepts and (vt is not int or not limit or -limit <= value < limit):
                    continue
                self.scalar(entry, value, st, path + key, gopath + key)
            elif code == _STRUCT:
                if type(value) is dict or _is_map(value):
                    assert t.struct is not None
                    self.struct(t.struct, value, f"{path}{key}.", f"{gopath}{key}.")
                else:
                    self.wrong(t, value, st, path + key, gopath + key)
            elif code == _LIST:
                self.list(t, sub, value, st, path + key, gopath + key)
            elif code == _MAP:
                self.map(t, sub, value, st, path + key, gopath + key)

    def list(
        self, t: Type, entry: _Entry, value: Any, holder: Struct, path: str, gopath: str
    ) -> None:
        if type(value) is not list and not isinstance(value, list | tuple):
            self.wrong(t, value, holder, path, gopath)
            return
        accepts, code, elem, limit, _ = entry
        if code == _STRUCT:
            assert elem.struct is not None
            sub = elem.struct
            for i, item in enumerate(value):
                if type(item) is dict or _is_map(item):
                    self.struct(sub, item, f"{path}[{i}].", gopath + ".")
                elif item is not None:
                    self.wrong(elem, item, holder, f"{path}[{i}]", gopath)
        elif accepts is not None:
            for i, item in enumerate(value):
                vt = type(item)
                if item is None or (
                    vt in accepts and (vt is not int or not limit or -limit <= item < limit)
                ):
                    continue
                self.scalar(entry, item, holder, f"{path}[{i}]", gopath)
        elif code != _ANY:
            for i, item in enumerate(value):
                if item is not None:
                    self.nested(entry, item, holder, f"{path}[{i}]", gopath)

    def map(
        self, t: Type, entry: _Entry, value: Any, holder: Struct, path: str, gopath: str
    ) -> None:
        if type(value) is not dict and not _is_map(value):
            self.wrong(t, value, holder, path, gopath)
            return
        accepts, code, _, limit, _ = entry
        if code == _ANY:
            return
        for key, item in value.items():
            if item is None:
                continue
            if accepts is not None:
                vt = type(item)
                if vt in accepts and (vt is not int or not limit or -limit <= item < limit):
                    continue
                self.scalar(entry, item, holder, f"{path}.{key}", gopath)
            else:
                self.nested(entry, item, holder, f"{path}.{key}", gopath)

    def nested(self, entry: _Entry, value: Any, holder: Struct, path: str, gopath: str) -> None:
        """A list or map element that is itself a container."""
        _, code, t, _, sub = entry
        if code == _STRUCT:
            if type(value) is dict or _is_map(value):
                assert t.struct is not None
                self.struct(t.struct, value, path + ".", gopath + ".")
            else:
                self.wrong(t, value, holder, path, gopath)
        elif code == _LIST:
            self.list(t, sub, value, holder, path, gopath)
        elif code == _MAP:
            self.map(t, sub, value, holder, path, gopath)

    def scalar(self, entry: _Entry, value: Any, holder: Struct, path: str, gopath: str) -> None:
        """The slow path for a scalar: subclasses of the JSON types, out-of-range ints, errors."""
        accepts, _, t, limit, _ = entry
        assert accepts is not None
        kind = _json_type(value)
        if t.tag is Tag.BYTES and kind is str:
            problem = base64_error(value)
            if problem is not None:
                self.errors.append(problem)
            return
        accepts = accepts or _ACCEPTS[t.tag]
        if kind not in accepts:
            self.wrong(t, value, holder, path, gopath)
        elif kind is int and limit and not -limit <= value < limit:
            self.wrong(t, value, holder, path, gopath, number=True)

    def wrong(
        self,
        t: Type,
        value: Any,
        holder: Struct,
        path: str,
        gopath: str,
        *,
        number: bool = False,
    ) -> None:
        kind = _json_type(value)
        if self.crd:
            got = _CRD_VALUE[kind]
            want = _CRD_TYPE_WORD.get(t.tag, "object")
            self.errors.append(
                f'{path}: Invalid value: "{got}": {path} in body must be of type {want}: "{got}"'
            )
            return
        what = _GO_VALUE[kind]
        if number or (kind is float and t.tag in (Tag.INT32, Tag.INT64, Tag.INT_OR_STRING)):
            what = f"number {json.dumps(value)}"
        self.errors.append(
            f"json: cannot unmarshal {what} into Go struct field "
            f"{holder.go_name}.{gopath} of type {go_type(t)}"
        )


def _is_map(value: Any) -> bool:
    return isinstance(value, Mapping)


def check_fields(kind: Kind, obj: Mapping[str, Any]) -> FieldReport:
    """Every unknown field path and every wrongly-typed value in `obj`, an object of `kind`.

    `apiVersion` and `kind` are always allowed; `metadata` is checked as ObjectMeta.
    Unknown paths are upstream's strict-decoding format, `spec.containers[0].imagePullPolicyy`
    (no leading dot), which upstream reports as 400 ``<Kind> in version "<v>" cannot be handled
    as a <Kind>: strict decoding error: unknown field "<path>", …`` under Strict and as
    ``Warning: unknown field "<path>"`` under Warn (`strict_decoding_error`,
    `unknown_field_warnings`). Type errors are complete messages (see the module docstring).
    """
    root = kind_schema(kind)
    checker = _Checker(root.crd)
    if isinstance(obj, Mapping):
        checker.struct(root, obj, "", "")
    else:
        what = _GO_VALUE[_json_type(obj)]
        checker.errors.append(
            f"json: cannot unmarshal {what} into Go value of type "
            f"{go_type(Type(Tag.STRUCT, struct=root))}"
        )
    return FieldReport(checker.unknown, checker.errors)


def strict_decoding_error(kind: Kind, report: FieldReport) -> str:
    """Upstream's 400 message for a body that fails decoding under fieldValidation=Strict.

    A type error wins over unknown fields, as upstream's decoder stops at the first one.
    CRD type errors are upstream 422s, not decode errors; callers wanting that split can use
    `is_crd(kind)`.
    """
    prefix = f'{kind.kind} in version "{kind.version}" cannot be handled as a {kind.kind}: '
    if report.type_errors:
        return prefix + report.type_errors[0]
    unknown = ", ".join(f'unknown field "{path}"' for path in report.unknown)
    return f"{prefix}strict decoding error: {unknown}"


def unknown_field_warnings(report: FieldReport) -> list[str]:
    """One warning text per unknown field, for `Warning` headers under fieldValidation=Warn."""
    return [f'unknown field "{path}"' for path in report.unknown]
