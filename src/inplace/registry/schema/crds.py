"""Kinds served from a CRD schema: the built-in VPA and its checkpoint, and every kind a
CustomResourceDefinition adds at run time.

Upstream serves these as CustomResourceDefinitions, so their graph is read from the CRD's
`openAPIV3Schema`: for the VPA transcribed into `vpa_schema.json` and
`vpa_checkpoint_schema.json`, for a created CRD the schema its kind carries
(`Kind.crd`, `custom.py`). Their structs are marked `crd`: the field check then uses the CRD
validator's wording. `apiVersion`, `kind` and `metadata` are implicit, as upstream's
apiextensions-apiserver adds them to every custom resource (and to every
`x-kubernetes-embedded-resource` object).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from importlib import resources
from typing import Any, Final

from inplace.registry.kinds import Kind
from inplace.registry.schema.builtin import model_struct
from inplace.registry.schema.types import (
    OBJECT_META_DOC,
    QUANTITY_NAME,
    Field,
    Struct,
    Tag,
    Type,
    type_meta_fields,
)

#: Kinds served from upstream's CRD schemas, and the file holding each (transcribed from
#: kubernetes/autoscaler vertical-pod-autoscaler/deploy/vpa-v1-crd-gen.yaml).
CRD_FILES: Final = {
    "VerticalPodAutoscaler": "vpa_schema.json",
    "VerticalPodAutoscalerCheckpoint": "vpa_checkpoint_schema.json",
}


@functools.cache
def crd(kind: str) -> dict[str, Any]:
    """Upstream's CRD (v1) of ``kind``: names, printer columns and `openAPIV3Schema`."""
    try:
        name = CRD_FILES[kind]
    except KeyError:
        raise KeyError(f"no CRD schema for {kind}") from None
    text = resources.files("inplace.registry").joinpath(name).read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def vpa_crd() -> dict[str, Any]:
    """Upstream's VPA CRD (v1): names, printer columns and `openAPIV3Schema`, as stored."""
    return crd("VerticalPodAutoscaler")


def is_crd(kind: Kind) -> bool:
    """Kinds served from a CRD schema upstream (stored, but no built-in model)."""
    return kind.model is None and kind.stored


def crd_schema(kind: Kind) -> Mapping[str, Any] | None:
    """The `openAPIV3Schema` a CRD-served kind is checked against: its CustomResourceDefinition's
    (a created CRD), or the transcribed one (the VPA); None for other kinds."""
    if kind.crd is not None:
        return kind.crd.schema
    if is_crd(kind) and kind.kind in CRD_FILES:
        schema: Mapping[str, Any] = crd(kind.kind)["openAPIV3Schema"]
        return schema
    return None


#: The pattern controller-gen writes for a ``resource.Quantity`` field of a CRD.
_CRD_QUANTITY_PATTERN: Final = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?"
    r"(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)


def _crd_type(node: Mapping[str, Any], go_name: str) -> Type:
    if node.get("x-kubernetes-int-or-string"):
        # A Go resource.Quantity in the CRD's type: int-or-string with the quantity pattern.
        is_quantity = node.get("pattern") == _CRD_QUANTITY_PATTERN
        return Type(Tag.INT_OR_STRING, ref=QUANTITY_NAME if is_quantity else None)
    type_ = node.get("type")
    if type_ == "object":
        if "properties" in node or node.get("x-kubernetes-embedded-resource"):
            return Type(Tag.STRUCT, struct=_crd_struct(node, go_name))
        if isinstance(node.get("additionalProperties"), Mapping):
            return Type(Tag.MAP, elem=_crd_type(node["additionalProperties"], go_name))
        return Type(Tag.ANY)
    if type_ == "array":
        return Type(Tag.LIST, elem=_crd_type(node.get("items") or {}, go_name))
    if type_ == "string":
        return Type(Tag.TIME if node.get("format") == "date-time" else Tag.STRING)
    if type_ == "integer":
        return Type(Tag.INT32 if node.get("format") == "int32" else Tag.INT64)
    if type_ == "number":
        return Type(Tag.NUMBER)
    if type_ == "boolean":
        return Type(Tag.BOOL)
    return Type(Tag.ANY)


def _crd_struct(node: Mapping[str, Any], go_name: str, *, root: bool = False) -> Struct:
    struct = Struct(
        name="",
        go_name=go_name,
        description=node.get("description", ""),
        crd=True,
        preserve_unknown=bool(node.get("x-kubernetes-preserve-unknown-fields")),
    )
    required = set(node.get("required", ()))
    for name, child in (node.get("properties") or {}).items():
        struct.fields[name] = Field(
            name=name,
            type=_crd_type(child, go_name),
            description=child.get("description", ""),
            required=name in required,
        )
    if root or node.get("x-kubernetes-embedded-resource"):
        _add_object_fields(struct)
    return struct


def _add_object_fields(struct: Struct) -> None:
    """`apiVersion`, `kind` and `metadata` (ObjectMeta), which every object has whether its
    schema names them or not."""
    for name, implicit in type_meta_fields().items():
        given = struct.fields.get(name)
        struct.fields[name] = Field(
            name,
            implicit.type,
            given.description if given else implicit.description,
            given.required if given else False,
        )
    given = struct.fields.get("metadata")
    struct.fields["metadata"] = Field(
        "metadata",
        Type(Tag.STRUCT, struct=model_struct("V1ObjectMeta")),
        given.description if given and given.description else OBJECT_META_DOC,
        given.required if given else False,
    )


@functools.cache
def crd_root(kind: Kind) -> Struct:
    """The root Struct of a CRD-served kind; its `metadata` is the built-in ObjectMeta."""
    schema = crd_schema(kind)
    if schema is None:
        raise KeyError(f"no schema for {kind.api_version} {kind.kind}")
    struct = _crd_struct(schema, kind.kind, root=True)
    group = ".".join(reversed(kind.group.split(".")))
    struct.name = f"{group}.{kind.version}.{kind.kind}"
    return struct
