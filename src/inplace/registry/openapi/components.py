"""The `components.schemas` of a document: upstream's fixed meta/v1 components, every model
reachable from the served kinds (named as upstream names them), and CRD schemas."""

from __future__ import annotations

import copy
from typing import Any, Final

from inplace.registry import schema as s
from inplace.registry.kinds import Kind
from inplace.registry.patchmeta import field_meta

REF: Final = "#/components/schemas/"
_META = s.META
STATUS = f"{_META}.Status"
DELETE_OPTIONS = f"{_META}.DeleteOptions"
WATCH_EVENT = f"{_META}.WatchEvent"
PATCH = f"{_META}.Patch"
# --- fixed components ---------------------------------------------------------------------

_QUANTITY_DOC: Final = (
    "Quantity is a fixed-point representation of a number. It provides convenient "
    "marshaling/unmarshaling in JSON and YAML, in addition to String() and AsInt64() "
    "accessors.\n\nThe serialization format is:\n\n``` <quantity>        ::= "
    '<signedNumber><suffix>\n\n\t(Note that <suffix> may be empty, from the "" case in '
    "<decimalSI>.)\n\n<digit>           ::= 0 | 1 | ... | 9 <digits>          ::= <digit> | "
    "<digit><digits> <number>          ::= <digits> | <digits>.<digits> | <digits>. | "
    '.<digits> <sign>            ::= "+" | "-" <signedNumber>    ::= <number> | '
    "<sign><number> <suffix>          ::= <binarySI> | <decimalExponent> | <decimalSI> "
    "<binarySI>        ::= Ki | Mi | Gi | Ti | Pi | Ei\n\n\t(International System of units; "
    'See: http://physics.nist.gov/cuu/Units/binary.html)\n\n<decimalSI>       ::= m | "" | '
    "k | M | G | T | P | E\n\n\t(Note that 1024 = 1Ki but 1000 = 1k; I didn't choose the "
    'capitalization.)\n\n<decimalExponent> ::= "e" <signedNumber> | "E" <signedNumber> '
    "```\n\nNo matter which of the three exponent forms is used, no quantity may represent a "
    "number greater than 2^63-1 in magnitude, nor may it have more than 3 decimal places. "
    "Numbers larger or more precise will be capped or rounded up. (E.g.: 0.1m will rounded up "
    "to 1m.) This may be extended in the future if we require larger or smaller quantities."
    "\n\nWhen a Quantity is parsed from a string, it will remember the type of suffix it had, "
    "and will use the same type again when it is serialized.\n\nBefore serializing, Quantity "
    'will be put in "canonical form". This means that Exponent/suffix will be adjusted up or '
    "down (with a corresponding increase or decrease in Mantissa) such that:\n\n- No precision "
    "is lost - No fractional digits will be emitted - The exponent (or suffix) is as large as "
    "possible.\n\nThe sign will be omitted unless the number is negative.\n\nExamples:\n\n- "
    '1.5 will be serialized as "1500m" - 1.5Gi will be serialized as "1536Mi"\n\nNote that the '
    "quantity will NEVER be internally represented by a floating point number. That is the "
    "whole point of this exercise.\n\nNon-canonical values will still parse as long as they "
    "are well formed, but will be re-emitted in their canonical form. (So always use canonical "
    "form, or don't use a form that would be in canonical form.)\n\nThis format is intended to "
    "make it difficult to use these numbers without writing some sort of special handling code "
    "in the hopes that that will cause implementors to also use a fixed point implementation."
)

_FIXED: Final[dict[str, dict[str, Any]]] = {
    s.TIME_NAME: {
        "description": "Time is a wrapper around time.Time which supports correct marshaling "
        "to YAML and JSON.  Wrappers are provided for many of the factory methods that the "
        "time package offers.",
        "format": "date-time",
        "type": "string",
    },
    s.MICRO_TIME_NAME: {
        "description": "MicroTime is version of Time with microsecond level precision.",
        "format": "date-time",
        "type": "string",
    },
    s.QUANTITY_NAME: {
        "description": _QUANTITY_DOC,
        "oneOf": [{"type": "string"}, {"type": "number"}],
    },
    s.INT_OR_STRING_NAME: {
        "description": "IntOrString is a type that can hold an int32 or a string.  When used "
        "in JSON or YAML marshalling and unmarshalling, it produces or consumes the inner type. "
        " This allows you to have, for example, a JSON field that can accept a name or number.",
        "format": "int-or-string",
        "oneOf": [{"type": "integer"}, {"type": "string"}],
    },
    s.RAW_EXTENSION_NAME: {
        "description": "RawExtension is used to hold extensions in external versions.",
        "type": "object",
    },
    s.FIELDS_V1_NAME: {
        "description": "FieldsV1 stores a set of fields in a data structure like a Trie, in "
        "JSON format.\n\nEach key is either a '.' representing the field itself, and will "
        "always map to an empty set, or a string representing a sub-field or item. The string "
        "will follow one of these four formats: 'f:<name>', where <name> is the name of a field "
        "in a struct, or key in a map 'v:<value>', where <value> is the exact json formatted "
        "value of a list item 'i:<index>', where <index> is position of a item in a list "
        "'k:<keys>', where <keys> is a map of  a list item's key fields to their unique values "
        "If a key maps to an empty Fields value, the field that key represents is part of the "
        "set.\n\nThe exact format is defined in sigs.k8s.io/structured-merge-diff",
        "type": "object",
    },
    PATCH: {
        "description": "Patch is provided to give a concrete name and type to the Kubernetes "
        "PATCH request body.",
        "type": "object",
    },
}

_SCALARS: Final[dict[s.Tag, dict[str, Any]]] = {
    s.Tag.STRING: {"type": "string"},
    s.Tag.BYTES: {"format": "byte", "type": "string"},
    s.Tag.INT32: {"format": "int32", "type": "integer"},
    s.Tag.INT64: {"format": "int64", "type": "integer"},
    s.Tag.NUMBER: {"format": "double", "type": "number"},
    s.Tag.BOOL: {"type": "boolean"},
}
_NAMED: Final = {
    s.Tag.TIME: s.TIME_NAME,
    s.Tag.MICRO_TIME: s.MICRO_TIME_NAME,
    s.Tag.QUANTITY: s.QUANTITY_NAME,
    s.Tag.INT_OR_STRING: s.INT_OR_STRING_NAME,
}
#: List fields whose upstream `x-kubernetes-list-map-keys` is more than the patch merge key.
_LIST_MAP_KEYS: Final = {
    ("V1Container", "ports"): ["containerPort", "protocol"],
    ("V1EphemeralContainer", "ports"): ["containerPort", "protocol"],
    ("V1PodSpec", "topologySpreadConstraints"): ["topologyKey", "whenUnsatisfiable"],
}


def ref(name: str) -> dict[str, Any]:
    return {"$ref": REF + name}


def gvk_of(group: str, version: str, kind: str) -> dict[str, str]:
    return {"group": group, "kind": kind, "version": version}


# --- components ---------------------------------------------------------------------------


class Components:
    """Collects the component schemas one document needs, walking from its roots."""

    def __init__(self, gvks: dict[str, list[dict[str, str]]]) -> None:
        self.schemas: dict[str, dict[str, Any]] = {}
        self.gvks = gvks
        self._pending: list[s.Struct] = []

    def add(self, struct: s.Struct) -> str:
        if struct.name not in self.schemas:
            self.schemas[struct.name] = {}
            self._pending.append(struct)
        return struct.name

    def add_fixed(self, name: str) -> str:
        if name not in self.schemas:
            self.schemas[name] = copy.deepcopy(_FIXED[name])
        return name

    def add_model(self, model: str) -> str:
        return self.add(s.model_struct(model))

    def finish(self) -> dict[str, dict[str, Any]]:
        while self._pending:
            struct = self._pending.pop()
            self.schemas[struct.name] = self.struct_schema(struct)
        return dict(sorted(self.schemas.items()))

    def struct_schema(self, struct: s.Struct) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "object"}
        if struct.description:
            out["description"] = struct.description
        if struct.fields:
            out["properties"] = {
                f.name: self.field_schema(struct, f) for f in struct.fields.values()
            }
        if struct.required:
            out["required"] = struct.required
        gvks = self.gvks.get(struct.name)
        if gvks:
            out["x-kubernetes-group-version-kind"] = gvks
        return out

    def field_schema(self, owner: s.Struct, f: s.Field) -> dict[str, Any]:
        out = self.type_schema(f.type)
        extensions: dict[str, Any] = {}
        meta = field_meta(owner.model, f.name) if owner.model else None
        if meta is not None and meta.strategies:
            order = ("merge", "replace", "retainKeys")
            extensions["x-kubernetes-patch-strategy"] = ",".join(
                x for x in order if x in meta.strategies
            )
            if meta.merge_key:
                extensions["x-kubernetes-patch-merge-key"] = meta.merge_key
            if f.type.tag is s.Tag.LIST and "merge" in meta.strategies:
                if meta.merge_key:
                    keys = _LIST_MAP_KEYS.get((owner.model or "", f.name), [meta.merge_key])
                    extensions["x-kubernetes-list-type"] = "map"
                    extensions["x-kubernetes-list-map-keys"] = keys
                else:
                    extensions["x-kubernetes-list-type"] = "set"
        if not f.description and not extensions:
            return out
        if "$ref" in out:
            out = {"allOf": [out]}
        if f.description:
            out["description"] = f.description
        out.update(extensions)
        return out

    def type_schema(self, t: s.Type) -> dict[str, Any]:
        tag = t.tag
        scalar = _SCALARS.get(tag)
        if scalar is not None:
            return dict(scalar)
        named = _NAMED.get(tag)
        if named is not None:
            return ref(self.add_fixed(named))
        if tag is s.Tag.ANY:
            return ref(self.add_fixed(t.ref)) if t.ref else {"type": "object"}
        if tag is s.Tag.LIST:
            assert t.elem is not None
            return {"items": self.type_schema(t.elem), "type": "array"}
        if tag is s.Tag.MAP:
            assert t.elem is not None
            return {"additionalProperties": self.type_schema(t.elem), "type": "object"}
        assert t.struct is not None
        if not t.struct.name:
            return self.struct_schema(t.struct)
        return ref(self.add(t.struct))


def crd_component(kind: Kind, components: Components) -> str:
    """A CRD kind (the VPA, its checkpoint, a created CRD's): its CRD schema with `apiVersion`
    and `kind` added and `metadata` pointing at ObjectMeta, as kube-apiserver publishes custom
    resources."""
    root = s.kind_schema(kind)
    schema = copy.deepcopy(dict(s.crd_schema(kind) or {}))
    components.add_model("V1ObjectMeta")
    schema.setdefault("type", "object")
    properties = schema.setdefault("properties", {})
    for name, doc in (("apiVersion", s.API_VERSION_DOC), ("kind", s.KIND_DOC)):
        properties.setdefault(name, {"description": doc, "type": "string"})
    properties["metadata"] = {
        "allOf": [ref(s.component_name("V1ObjectMeta"))],
        "description": s.OBJECT_META_DOC,
    }
    schema["x-kubernetes-group-version-kind"] = [gvk_of(kind.group, kind.version, kind.kind)]
    components.schemas[root.name] = schema
    return root.name
