"""Each served kind's root struct and its list's, from wherever its graph comes from.

A built-in kind's root is its client model; a CRD-served kind's is read from the CRD schema
(`crds`); the metrics kinds' are written by hand (`metrics`). Lists are the client's list
model, or made like upstream's for the kinds without one.
"""

from __future__ import annotations

import functools

from inplace.registry.kinds import Kind
from inplace.registry.schema.builtin import list_model, model_struct
from inplace.registry.schema.crds import crd_root, crd_schema
from inplace.registry.schema.metrics import metrics_structs
from inplace.registry.schema.types import LIST_META_DOC, Field, Struct, Tag, Type, type_meta_fields


@functools.cache
def kind_schema(kind: Kind) -> Struct:
    """The root Struct of a served kind (its `metadata` is always ObjectMeta)."""
    if kind.model is not None:
        return model_struct(kind.model)
    if crd_schema(kind) is not None:
        return crd_root(kind)
    structs = metrics_structs()
    if kind.kind not in structs:
        raise KeyError(f"no schema for {kind.api_version} {kind.kind}")
    return structs[kind.kind]


@functools.cache
def list_schema(kind: Kind) -> Struct:
    """The Struct of `<Kind>List`: the client's list model, or one made like upstream's."""
    if kind.model is not None:
        return model_struct(list_model(kind.model))
    root = kind_schema(kind)
    fields = type_meta_fields()
    fields["items"] = Field(
        "items",
        Type(Tag.LIST, elem=Type(Tag.STRUCT, struct=root)),
        f"List of {kind.plural}. More info: "
        "https://git.k8s.io/community/contributors/devel/api-conventions.md",
        required=True,
    )
    fields["metadata"] = Field(
        "metadata", Type(Tag.STRUCT, struct=model_struct("V1ListMeta")), LIST_META_DOC
    )
    return Struct(
        name=f"{root.name}List",
        go_name=kind.list_kind,
        description=f"{kind.list_kind} is a list of {kind.kind}",
        fields=fields,
        crd=root.crd,
    )
