"""Label and field selectors, parsed and matched exactly as the Kubernetes API server does.

Clients send selectors as strings (`?labelSelector=app=web,tier in (a,b)`,
`?fieldSelector=spec.nodeName=n1`) and as `metav1.LabelSelector` dicts inside objects (a
Deployment's `spec.selector`, a PDB's). Both forms land here, so one implementation decides
"does this object match" for LIST, WATCH, controllers and the scheduler alike.

The grammar, validation, error messages, value sorting and the `String()` form follow upstream
(apimachinery `labels/selector.go`, `fields/selector.go`), so what kubectl accepts we accept,
what it rejects we reject with the same words, and `str()` of a selector is what upstream
would print.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final

from inplace.api.names import label_value_errors, qualified_name_errors
from inplace.api.objects import get_path

__all__ = [
    "EVENT_FIELDS",
    "JOB_FIELDS",
    "METADATA_FIELDS",
    "NAMESPACE_FIELDS",
    "NODE_FIELDS",
    "POD_FIELDS",
    "REPLICA_SET_FIELDS",
    "SECRET_FIELDS",
    "FieldRequirement",
    "FieldSelector",
    "LabelSelector",
    "Requirement",
    "SelectableFields",
    "SelectorError",
]


class SelectorError(ValueError):
    """A selector that does not parse, or names a label, value or field upstream would reject.

    The message is upstream's, so clients see the same text a real API server would send.
    """


def _invalid(path: str, value: object, detail: str) -> str:
    """upstream field.Invalid(...).Error(): `PATH: Invalid value: "v": detail`."""
    shown = json.dumps(value) if isinstance(value, str) else f"[]string{{{_go_strs(value)}}}"
    return f"{path}: Invalid value: {shown}: {detail}"


def _go_strs(values: object) -> str:
    if isinstance(values, (list, tuple)):
        return ", ".join(json.dumps(v) for v in values)
    return str(values)


def _aggregate(errs: list[str]) -> str:
    """upstream utilerrors.Aggregate: one error as is, several as `[a, b]`."""
    return errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]"


# --- label selectors ----------------------------------------------------------------------

# upstream selection.Operator values
IN: Final = "in"
NOT_IN: Final = "notin"
EQUALS: Final = "="
DOUBLE_EQUALS: Final = "=="
NOT_EQUALS: Final = "!="
EXISTS: Final = "exists"
DOES_NOT_EXIST: Final = "!"
GREATER_THAN: Final = "gt"
LESS_THAN: Final = "lt"

_BINARY_OPERATORS: Final = (IN, NOT_IN, EQUALS, DOUBLE_EQUALS, NOT_EQUALS, GREATER_THAN, LESS_THAN)
_OPERATOR_TEXT: Final = {
    EQUALS: "=",
    DOUBLE_EQUALS: "==",
    NOT_EQUALS: "!=",
    IN: " in ",
    NOT_IN: " notin ",
    GREATER_THAN: ">",
    LESS_THAN: "<",
}
_INT64_RE: Final = re.compile(r"^[+-]?[0-9]+$")


def _parse_int64(text: str) -> int | None:
    """Go strconv.ParseInt(s, 10, 64): optional sign, decimal digits, in int64 range."""
    if not _INT64_RE.match(text):
        return None
    n = int(text)
    return n if -(2**63) <= n < 2**63 else None


@dataclass(frozen=True, slots=True)
class Requirement:
    """One `key op values` term; a selector is the AND of its requirements.

    `operator` is upstream's selection.Operator string ("=", "==", "!=", "in", "notin",
    "exists", "!", "gt", "lt"). Values keep the order they were given in; `str()` sorts them,
    as upstream does, and the string parser hands them over sorted and de-duplicated.
    """

    key: str
    operator: str
    values: tuple[str, ...] = ()

    @classmethod
    def new(
        cls, key: str, operator: str, values: Iterable[str] = (), *, path: str = ""
    ) -> Requirement:
        """upstream NewRequirement: validates the key, the operator's arity and each value."""
        vals = tuple(values)
        errs: list[str] = []
        key_path = f"{path}.key" if path else "key"
        values_path = f"{path}.values" if path else "values"
        if key_errs := qualified_name_errors(key):
            errs.append(_invalid(key_path, key, "; ".join(key_errs)))
        if operator in (IN, NOT_IN):
            if not vals:
                errs.append(
                    _invalid(
                        values_path, vals, "for 'in', 'notin' operators, values set can't be empty"
                    )
                )
        elif operator in (EQUALS, DOUBLE_EQUALS, NOT_EQUALS):
            if len(vals) != 1:
                errs.append(
                    _invalid(
                        values_path, vals, "exact-match compatibility requires one single value"
                    )
                )
        elif operator in (EXISTS, DOES_NOT_EXIST):
            if vals:
                errs.append(
                    _invalid(
                        values_path, vals, "values set must be empty for exists and does not exist"
                    )
                )
        elif operator in (GREATER_THAN, LESS_THAN):
            if len(vals) != 1:
                errs.append(
                    _invalid(
                        values_path, vals, "for 'Gt', 'Lt' operators, exactly one value is required"
                    )
                )
            for i, v in enumerate(vals):
                if _parse_int64(v) is None:
                    errs.append(
                        _invalid(
                            f"{values_path}[{i}]",
                            v,
                            "for 'Gt', 'Lt' operators, the value must be an integer",
                        )
                    )
        else:
            supported = ", ".join(
                json.dumps(o) for o in (*_BINARY_OPERATORS, EXISTS, DOES_NOT_EXIST)
            )
            op_path = f"{path}.operator" if path else "operator"
            bad = json.dumps(operator)
            errs.append(f"{op_path}: Unsupported value: {bad}: supported values: {supported}")
        for i, v in enumerate(vals):
            if value_errs := label_value_errors(v):
                errs.append(_invalid(f"{values_path}[{i}][{key}]", v, "; ".join(value_errs)))
        if errs:
            raise SelectorError(_aggregate(errs))
        return cls(key, operator, vals)

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op in (IN, EQUALS, DOUBLE_EQUALS):
            return self.key in labels and labels[self.key] in self.values
        if op in (NOT_IN, NOT_EQUALS):
            return self.key not in labels or labels[self.key] not in self.values
        if op == EXISTS:
            return self.key in labels
        if op == DOES_NOT_EXIST:
            return self.key not in labels
        if op in (GREATER_THAN, LESS_THAN):
            if self.key not in labels or len(self.values) != 1:
                return False
            have, want = _parse_int64(labels[self.key]), _parse_int64(self.values[0])
            if have is None or want is None:
                return False
            return have > want if op == GREATER_THAN else have < want
        return False

    def __str__(self) -> str:
        if self.operator == DOES_NOT_EXIST:
            return "!" + self.key
        if self.operator == EXISTS:
            return self.key
        values = self.values[0] if len(self.values) == 1 else ",".join(sorted(self.values))
        text = self.key + _OPERATOR_TEXT[self.operator]
        if self.operator in (IN, NOT_IN):
            return f"{text}({values})"
        return text + values


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """An AND of requirements, or the selector that matches nothing.

    Upstream distinguishes three cases that look alike as strings: a nil `metav1.LabelSelector`
    matches nothing (a PDB without a selector selects no pods), an empty one matches everything,
    and a parsed string matches what its requirements say. `matches_nothing` keeps the first.
    """

    requirements: tuple[Requirement, ...] = ()
    matches_nothing: bool = False

    @classmethod
    def everything(cls) -> LabelSelector:
        return _EVERYTHING

    @classmethod
    def nothing(cls) -> LabelSelector:
        return _NOTHING

    @classmethod
    def parse(cls, text: str) -> LabelSelector:
        """Parse kubectl's `-l` syntax (upstream labels.Parse); "" selects everything."""
        requirements = _LabelParser(text).parse()
        return cls(_sorted_by_key(requirements))

    @classmethod
    def from_dict(cls, selector: Mapping[str, Any] | None) -> LabelSelector:
        """upstream metav1.LabelSelectorAsSelector: None → nothing, {} → everything."""
        if selector is None:
            return _NOTHING
        match_labels: Mapping[str, Any] = selector.get("matchLabels") or {}
        match_expressions: list[Mapping[str, Any]] = selector.get("matchExpressions") or []
        if not match_labels and not match_expressions:
            return _EVERYTHING
        requirements: list[Requirement] = []
        for key, value in match_labels.items():
            requirements.append(Requirement.new(str(key), EQUALS, [_as_str(value)]))
        for expr in match_expressions:
            op_name = expr.get("operator") or ""
            op = _LABEL_SELECTOR_OPERATORS.get(op_name)
            if op is None:
                raise SelectorError(f"{json.dumps(op_name)} is not a valid label selector operator")
            values = [_as_str(v) for v in expr.get("values") or []]
            requirements.append(Requirement.new(str(expr.get("key") or ""), op, values))
        return cls(_sorted_by_key(requirements))

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        if self.matches_nothing:
            return False
        have = labels or {}
        return all(r.matches(have) for r in self.requirements)

    def is_everything(self) -> bool:
        """True when the selector does not restrict anything (upstream Empty())."""
        return not self.matches_nothing and not self.requirements

    def exact(self, key: str) -> str | None:
        """The single value `key` must have (upstream RequiresExactMatch), for index lookups."""
        for r in self.requirements:
            if r.key == key:
                if r.operator in (EQUALS, DOUBLE_EQUALS, IN) and len(r.values) == 1:
                    return r.values[0]
                return None
        return None

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


_EVERYTHING: Final = LabelSelector()
_NOTHING: Final = LabelSelector(matches_nothing=True)
_LABEL_SELECTOR_OPERATORS: Final = {
    "In": IN,
    "NotIn": NOT_IN,
    "Exists": EXISTS,
    "DoesNotExist": DOES_NOT_EXIST,
}


def _as_str(value: Any) -> str:
    return value if isinstance(value, str) else str(value)


def _sorted_by_key(requirements: Iterable[Requirement]) -> tuple[Requirement, ...]:
    return tuple(sorted(requirements, key=lambda r: r.key))


# The lexer and parser mirror upstream's token for token, so that every oddity
# ("x in (,a)", "x=", "in in (in)", "!x=y" rejected) behaves the same.
_ERROR, _EOS, _CLOSE, _COMMA, _NOT, _DEQ, _EQ, _GT, _ID, _IN, _LT, _NEQ, _NOTIN, _OPEN = range(14)
_SYMBOLS: Final = {
    ")": _CLOSE,
    ",": _COMMA,
    "!": _NOT,
    "==": _DEQ,
    "=": _EQ,
    ">": _GT,
    "in": _IN,
    "<": _LT,
    "!=": _NEQ,
    "notin": _NOTIN,
    "(": _OPEN,
}
_SPECIAL: Final = frozenset("=!(),><")
_WHITESPACE: Final = frozenset(" \t\r\n")


def _lex(text: str) -> list[tuple[int, str]]:
    items: list[tuple[int, str]] = []
    pos, n = 0, len(text)
    while True:
        while pos < n and text[pos] in _WHITESPACE:
            pos += 1
        if pos >= n:
            items.append((_EOS, ""))
            return items
        if text[pos] in _SPECIAL:
            # longest run of special characters that is still a known symbol
            buffer, last = "", (_ERROR, "")
            while pos < n and text[pos] in _SPECIAL:
                buffer += text[pos]
                if buffer in _SYMBOLS:
                    last = (_SYMBOLS[buffer], buffer)
                    pos += 1
                elif last[0] != _ERROR:
                    break
                else:
                    pos += 1
            if last[0] == _ERROR:
                items.append((_ERROR, f"error expected: keyword found '{buffer}'"))
            else:
                items.append(last)
        else:
            start = pos
            while pos < n and text[pos] not in _SPECIAL and text[pos] not in _WHITESPACE:
                pos += 1
            word = text[start:pos]
            items.append((_SYMBOLS.get(word, _ID), word))


class _LabelParser:
    """upstream labels.Parser: recursive descent over the pre-scanned tokens."""

    def __init__(self, text: str) -> None:
        self.items = _lex(text)
        self.pos = 0

    def _look(self, values: bool) -> tuple[int, str]:
        tok, lit = self.items[self.pos]
        if values and tok in (_IN, _NOTIN):
            tok = _ID
        return tok, lit

    def _take(self, values: bool) -> tuple[int, str]:
        item = self._look(values)
        self.pos += 1
        return item

    def parse(self) -> list[Requirement]:
        requirements: list[Requirement] = []
        while True:
            tok, lit = self._look(True)
            if tok in (_ID, _NOT):
                try:
                    requirements.append(self._requirement())
                except SelectorError as e:
                    raise SelectorError(f"unable to parse requirement: {e}") from None
                tok, lit = self._take(True)
                if tok == _EOS:
                    return requirements
                if tok == _COMMA:
                    tok2, lit2 = self._look(True)
                    if tok2 not in (_ID, _NOT):
                        raise SelectorError(f"found '{lit2}', expected: identifier after ','")
                else:
                    raise SelectorError(f"found '{lit}', expected: ',' or 'end of string'")
            elif tok == _EOS:
                return requirements
            else:
                raise SelectorError(f"found '{lit}', expected: !, identifier, or 'end of string'")

    def _requirement(self) -> Requirement:
        operator = ""
        tok, key = self._take(True)
        if tok == _NOT:
            operator = DOES_NOT_EXIST
            tok, key = self._take(True)
        if tok != _ID:
            raise SelectorError(f"found '{key}', expected: identifier")
        if key_errs := qualified_name_errors(key):
            raise SelectorError(_invalid("<nil>", key, "; ".join(key_errs)))
        if self._look(True)[0] in (_EOS, _COMMA) and operator != DOES_NOT_EXIST:
            operator = EXISTS
        if operator in (EXISTS, DOES_NOT_EXIST):
            return Requirement.new(key, operator)
        operator = self._operator()
        values = self._set_values() if operator in (IN, NOT_IN) else self._exact_value()
        return Requirement.new(key, operator, sorted(values))

    def _operator(self) -> str:
        tok, lit = self._take(False)
        op = {
            _IN: IN,
            _EQ: EQUALS,
            _DEQ: DOUBLE_EQUALS,
            _GT: GREATER_THAN,
            _LT: LESS_THAN,
            _NOTIN: NOT_IN,
            _NEQ: NOT_EQUALS,
        }.get(tok)
        if op is None:
            raise SelectorError(f"found '{lit}', expected: {', '.join(_BINARY_OPERATORS)}")
        return op

    def _set_values(self) -> set[str]:
        tok, lit = self._take(True)
        if tok != _OPEN:
            raise SelectorError(f"found '{lit}' expected: '('")
        tok, lit = self._look(True)
        if tok in (_ID, _COMMA):
            values = self._identifiers()
            if self._take(True)[0] != _CLOSE:
                raise SelectorError(f"found '{lit}', expected: ')'")
            return values
        if tok == _CLOSE:  # "()" is the set holding the empty string
            self._take(True)
            return {""}
        raise SelectorError(f"found '{lit}', expected: ',', ')' or identifier")

    def _identifiers(self) -> set[str]:
        values: set[str] = set()
        while True:
            tok, lit = self._take(True)
            if tok == _ID:
                values.add(lit)
                tok2, lit2 = self._look(True)
                if tok2 == _COMMA:
                    continue
                if tok2 == _CLOSE:
                    return values
                raise SelectorError(f"found '{lit2}', expected: ',' or ')'")
            if tok == _COMMA:  # empty entries ("(,a)", "(a,,b)", "(a,)") mean ""
                if not values:
                    values.add("")
                tok2 = self._look(True)[0]
                if tok2 == _CLOSE:
                    values.add("")
                    return values
                if tok2 == _COMMA:
                    values.add("")
                continue
            raise SelectorError(f"found '{lit}', expected: ',', or identifier")

    def _exact_value(self) -> set[str]:
        if self._look(True)[0] in (_EOS, _COMMA):
            return {""}
        tok, lit = self._take(True)
        if tok == _ID:
            return {lit}
        raise SelectorError(f"found '{lit}', expected: identifier")


# --- field selectors ----------------------------------------------------------------------


def _text(obj: Mapping[str, Any], *path: str) -> str:
    """A string field as upstream's fields.Set holds it: missing is ""."""
    value = get_path(obj, *path)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _flag(obj: Mapping[str, Any], *path: str) -> str:
    """A bool field as strconv.FormatBool renders it; missing is Go's zero value, false."""
    return "true" if get_path(obj, *path) is True else "false"


def _count(obj: Mapping[str, Any], *path: str) -> str:
    """An int field as strconv.Itoa renders it; missing is Go's zero value, 0."""
    value = get_path(obj, *path)
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else "0"


def _pod_ip(pod: Mapping[str, Any]) -> str:
    ips = get_path(pod, "status", "podIPs")
    if isinstance(ips, list) and ips and isinstance(ips[0], Mapping):
        return _text(ips[0], "ip")
    return _text(pod, "status", "podIP")


def _event_source(event: Mapping[str, Any]) -> str:
    return _text(event, "source", "component") or _text(event, "reportingComponent")


_Extractor = Callable[[Mapping[str, Any]], str]


def _at(*path: str) -> _Extractor:
    return lambda o: _text(o, *path)


_METADATA_FIELDS: Final[dict[str, _Extractor]] = {
    "metadata.name": _at("metadata", "name"),
    "metadata.namespace": _at("metadata", "namespace"),
}


@dataclass(frozen=True, eq=False)
class SelectableFields:
    """The field labels a kind's `fieldSelector` may name and how each is read from an object:
    upstream's ``ToSelectableFields`` (``GetAttrs``) in the kind's strategy, plus the legacy
    labels its field label conversion renames. Every kind has ``metadata.name`` and
    ``metadata.namespace``; a kind names its own in its strategy."""

    fields: Mapping[str, _Extractor] = dataclasses.field(default_factory=dict)
    aliases: Mapping[str, str] = dataclasses.field(default_factory=dict)

    @functools.cached_property
    def extractors(self) -> Mapping[str, _Extractor]:
        """Field label → how to read it; built once, as matching runs per listed object."""
        return MappingProxyType({**_METADATA_FIELDS, **self.fields})

    def supported(self) -> frozenset[str]:
        """The field labels a `fieldSelector` may name."""
        return frozenset(self.extractors)


#: What a kind without field labels of its own selects on.
METADATA_FIELDS: Final = SelectableFields()
POD_FIELDS: Final = SelectableFields(
    {
        "spec.nodeName": _at("spec", "nodeName"),
        "spec.restartPolicy": _at("spec", "restartPolicy"),
        "spec.schedulerName": _at("spec", "schedulerName"),
        "spec.serviceAccountName": _at("spec", "serviceAccountName"),
        "spec.hostNetwork": lambda o: _flag(o, "spec", "hostNetwork"),
        "status.phase": _at("status", "phase"),
        "status.podIP": _pod_ip,
        "status.nominatedNodeName": _at("status", "nominatedNodeName"),
    },
    aliases={"spec.host": "spec.nodeName"},
)
EVENT_FIELDS: Final = SelectableFields(
    {
        "involvedObject.kind": _at("involvedObject", "kind"),
        "involvedObject.namespace": _at("involvedObject", "namespace"),
        "involvedObject.name": _at("involvedObject", "name"),
        "involvedObject.uid": _at("involvedObject", "uid"),
        "involvedObject.apiVersion": _at("involvedObject", "apiVersion"),
        "involvedObject.resourceVersion": _at("involvedObject", "resourceVersion"),
        "involvedObject.fieldPath": _at("involvedObject", "fieldPath"),
        "reason": _at("reason"),
        "reportingComponent": _at("reportingComponent"),
        "source": _event_source,
        "type": _at("type"),
    }
)
NODE_FIELDS: Final = SelectableFields(
    {"spec.unschedulable": lambda o: _flag(o, "spec", "unschedulable")}
)
NAMESPACE_FIELDS: Final = SelectableFields({"status.phase": _at("status", "phase")})
JOB_FIELDS: Final = SelectableFields(
    {"status.successful": lambda o: _count(o, "status", "succeeded")}
)
REPLICA_SET_FIELDS: Final = SelectableFields(
    {"status.replicas": lambda o: _count(o, "status", "replicas")}
)
SECRET_FIELDS: Final = SelectableFields({"type": _at("type")})


def _escape_value(value: str) -> str:
    return value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")


def _unescape_value(text: str) -> str:
    """upstream fields.UnescapeValue: only backslash, comma and equals may be escaped.

    A bare comma or equals sign in a value is an error, so a value never splits ambiguously.
    """
    if not any(c in text for c in "\\,="):
        return text
    out: list[str] = []
    in_slash = False
    for c in text:
        if in_slash:
            if c not in "\\,=":
                raise SelectorError(f"invalid field selector: invalid escape sequence: \\{c}")
            out.append(c)
            in_slash = False
        elif c == "\\":
            in_slash = True
        elif c in ",=":
            raise SelectorError(f"invalid field selector: unescaped character in value: {c!r}")
        else:
            out.append(c)
    if in_slash:
        raise SelectorError("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


def _split_terms(text: str) -> list[str]:
    """Split on commas that are not escaped by a backslash."""
    if not text:
        return []
    terms: list[str] = []
    start, slash = 0, False
    for i, c in enumerate(text):
        if slash:
            slash = False
        elif c == "\\":
            slash = True
        elif c == ",":
            terms.append(text[start:i])
            start = i + 1
    terms.append(text[start:])
    return terms


def _split_term(term: str) -> tuple[str, str, str] | None:
    """The first operator wins; the field name has no escaping."""
    for i in range(len(term)):
        for op in ("!=", "==", "="):
            if term.startswith(op, i):
                return term[:i], op, term[i + len(op) :]
    return None


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    """`field=value` (equal) or `field!=value` (not equal), value already unescaped."""

    field: str
    value: str
    equal: bool = True

    def __str__(self) -> str:
        return f"{self.field}{'=' if self.equal else '!='}{_escape_value(self.value)}"


@dataclass(frozen=True, slots=True)
class FieldSelector:
    """An AND of field terms over the fields a kind makes selectable (its strategy's
    `SelectableFields`)."""

    fields: SelectableFields
    requirements: tuple[FieldRequirement, ...] = ()

    @classmethod
    def parse(cls, text: str, *, fields: SelectableFields = METADATA_FIELDS) -> FieldSelector:
        """upstream fields.ParseSelector, then the kind's field label conversion."""
        parsed: list[FieldRequirement] = []
        for part in sorted(_split_terms(text)):
            if not part:
                continue
            split = _split_term(part)
            if split is None:
                raise SelectorError(f"invalid selector: '{text}'; can't understand '{part}'")
            field, op, raw = split
            parsed.append(FieldRequirement(field, _unescape_value(raw), op != "!="))
        known = fields.extractors
        requirements: list[FieldRequirement] = []
        for r in parsed:
            field = fields.aliases.get(r.field, r.field)
            if field not in known:
                raise SelectorError(f"field label not supported: {r.field}")
            requirements.append(FieldRequirement(field, r.value, r.equal))
        return cls(fields, tuple(requirements))

    def matches(self, obj: Mapping[str, Any]) -> bool:
        known = self.fields.extractors
        return all((known[r.field](obj) == r.value) == r.equal for r in self.requirements)

    def exact(self, field: str) -> str | None:
        """The value an `=` term requires of `field` (upstream RequiresExactMatch), for indexes."""
        for r in self.requirements:
            if r.field == field and r.equal:
                return r.value
        return None

    def is_everything(self) -> bool:
        return not self.requirements

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)
