"""The vocabulary of the type graph: tags, types, fields and structs, and upstream's names.

A `Struct` is an object type (a client model, a CRD's inline object or a hand-written metrics
type); its `Field`s have a `Type`, which is a scalar `Tag` or a list, map or struct of further
types. Every reader of the graph (the field check, OpenAPI, canonical quantities) speaks this.
Also here: the upstream component names of the free-form and scalar types, and upstream's
descriptions of the fields every kind shares (`apiVersion`, `kind`, `metadata`).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Final

META: Final = "io.k8s.apimachinery.pkg.apis.meta.v1"
QUANTITY_NAME: Final = "io.k8s.apimachinery.pkg.api.resource.Quantity"
INT_OR_STRING_NAME: Final = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
RAW_EXTENSION_NAME: Final = "io.k8s.apimachinery.pkg.runtime.RawExtension"
FIELDS_V1_NAME: Final = f"{META}.FieldsV1"
TIME_NAME: Final = f"{META}.Time"
MICRO_TIME_NAME: Final = f"{META}.MicroTime"


class Tag(enum.IntEnum):
    """What a JSON value must be. Scalars first; LIST, MAP and STRUCT have children."""

    STRING = 1
    BYTES = 2
    INT32 = 3
    INT64 = 4
    NUMBER = 5
    BOOL = 6
    TIME = 7
    MICRO_TIME = 8
    QUANTITY = 9
    INT_OR_STRING = 10
    ANY = 11
    LIST = 12
    MAP = 13
    STRUCT = 14


@dataclass(frozen=True, eq=False)
class Type:
    """A field's type. `elem` for LIST/MAP, `struct` for STRUCT; `ref` names a free-form type."""

    tag: Tag
    elem: Type | None = None
    struct: Struct | None = None
    #: For ANY: the upstream component it stands for (RawExtension, FieldsV1), if any.
    ref: str | None = None


@dataclass(eq=False)
class Field:
    name: str
    type: Type
    description: str = ""
    required: bool = False


@dataclass(eq=False)
class Struct:
    """An object type: a client model, a hand-written metrics type, or a CRD's inline object."""

    #: Upstream component name ("io.k8s.api.core.v1.PodSpec"); "" for a CRD's inline objects.
    name: str
    #: The Go type name upstream's messages use ("PodSpec").
    go_name: str
    description: str
    fields: dict[str, Field] = field(default_factory=dict)
    #: The `kubernetes` client model class name, for patch metadata; None when hand-written.
    model: str | None = None
    #: True for structs transcribed from a CRD schema (the VPA): CRD-style error wording.
    crd: bool = False
    #: A CRD object with `x-kubernetes-preserve-unknown-fields` beside its `properties`:
    #: fields it does not name are kept, unchecked.
    preserve_unknown: bool = False
    #: The check's per-field table, built on first use (see `check.py`).
    table: dict[str, Any] | None = field(default=None, repr=False)

    @property
    def required(self) -> list[str]:
        return [f.name for f in self.fields.values() if f.required]


# --- scalar singletons --------------------------------------------------------------------

STRING: Final = Type(Tag.STRING)
BYTES: Final = Type(Tag.BYTES)
INT32: Final = Type(Tag.INT32)
INT64: Final = Type(Tag.INT64)
NUMBER: Final = Type(Tag.NUMBER)
BOOL: Final = Type(Tag.BOOL)
TIME: Final = Type(Tag.TIME)
MICRO_TIME: Final = Type(Tag.MICRO_TIME)
QUANTITY: Final = Type(Tag.QUANTITY)
INT_OR_STRING: Final = Type(Tag.INT_OR_STRING)
ANY: Final = Type(Tag.ANY)
RAW_EXTENSION: Final = Type(Tag.ANY, ref=RAW_EXTENSION_NAME)
FIELDS_V1: Final = Type(Tag.ANY, ref=FIELDS_V1_NAME)


# --- the fields every kind shares, with upstream's descriptions ---------------------------

API_VERSION_DOC: Final = (
    "APIVersion defines the versioned schema of this representation of an object. Servers "
    "should convert recognized schemas to the latest internal value, and may reject "
    "unrecognized values. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"
)
KIND_DOC: Final = (
    "Kind is a string value representing the REST resource this object represents. Servers "
    "may infer this from the endpoint the client submits requests to. Cannot be updated. In "
    "CamelCase. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"
)
OBJECT_META_DOC: Final = (
    "Standard object's metadata. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)
LIST_META_DOC: Final = (
    "Standard list metadata. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)


def type_meta_fields() -> dict[str, Field]:
    """`apiVersion` and `kind`, for the structs written here rather than read from a model."""
    return {
        "apiVersion": Field("apiVersion", STRING, API_VERSION_DOC),
        "kind": Field("kind", STRING, KIND_DOC),
    }
