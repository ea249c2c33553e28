"""Kinds served from upstream's CRD schemas (the autoscaling.k8s.io VPA and its checkpoint).

Upstream serves these as CustomResourceDefinitions, so their graph is read from the CRD's
`openAPIV3Schema` (transcribed into `vpa_schema.json` and `vpa_checkpoint_schema.json`), and
their structs are marked `crd`: the field check then uses the CRD validator's wording.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from importlib import resources
from typing import Any, Final

from inplace.api.kinds import Kind
from inplace.api.schema.builtin import model_struct
from inplace.api.schema.types import QUANTITY_NAME, Field, Struct, Tag, Type

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
    text = resources.files("inplace.api").joinpath(name).read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def vpa_crd() -> dict[str, Any]:
    """Upstream's VPA CRD (v1): names, printer columns and `openAPIV3Schema`, as stored."""
    return crd("VerticalPodAutoscaler")


def is_crd(kind: Kind) -> bool:
    """Kinds served from a CRD schema upstream (stored, but no built-in model)."""
    return kind.model is None and kind.stored


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
        if "properties" in node:
            return Type(Tag.STRUCT, struct=_crd_struct(node, go_name))
        if "additionalProperties" in node:
            return Type(Tag.MAP, elem=_crd_type(node["additionalProperties"], go_name))
        return Type(Tag.ANY)
    if type_ == "array":
        return Type(Tag.LIST, elem=_crd_type(node.get("items", {}), go_name))
    if type_ == "string":
        return Type(Tag.TIME if node.get("format") == "date-time" else Tag.STRING)
    if type_ == "integer":
        return Type(Tag.INT32 if node.get("format") == "int32" else Tag.INT64)
    if type_ == "number":
        return Type(Tag.NUMBER)
    if type_ == "boolean":
        return Type(Tag.BOOL)
    return Type(Tag.ANY)


def _crd_struct(node: Mapping[str, Any], go_name: str) -> Struct:
    struct = Struct(name="", go_name=go_name, description=node.get("description", ""), crd=True)
    required = set(node.get("required", ()))
    for name, child in node.get("properties", {}).items():
        struct.fields[name] = Field(
            name=name,
            type=_crd_type(child, go_name),
            description=child.get("description", ""),
            required=name in required,
        )
    return struct


@functools.cache
def crd_root(kind_name: str) -> Struct:
    """The root Struct of a CRD-served kind; its `metadata` is the built-in ObjectMeta."""
    data = crd(kind_name)
    kind = data["names"]["kind"]
    struct = _crd_struct(data["openAPIV3Schema"], kind)
    group = ".".join(reversed(data["group"].split(".")))
    struct.name = f"{group}.{data['version']}.{kind}"
    meta = struct.fields["metadata"]
    struct.fields["metadata"] = Field(
        "metadata",
        Type(Tag.STRUCT, struct=model_struct("V1ObjectMeta")),
        meta.description,
        meta.required,
    )
    return struct
