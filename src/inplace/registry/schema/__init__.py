"""The server's knowledge of every kind's fields, and the unknown-field / wrong-type check.

One type graph serves several readers: `check_fields` (run on every write, so it must be cheap),
the OpenAPI documents (`inplace.registry.openapi`, which is what `kubectl explain` and
`kubectl apply` read), canonical quantities and field management. Built-in kinds get their
graph from the official `kubernetes` client's models (field names, types, descriptions,
required-ness); the VerticalPodAutoscaler and its checkpoint get it from upstream's CRD
schemas (`vpa_schema.json`, transcribed from kubernetes/autoscaler); the metrics.k8s.io kinds
are written by hand. Graphs are built once per model and shared (`functools.cache`).

The package is cut along those lines: `types` (tags, types, fields, structs and upstream's
names), `builtin` (structs from the client's models, with the tables of what the models cannot
say), `crds` (structs from the CRD schemas), `metrics` (the hand-written metrics kinds), `roots`
(each served kind's root and list struct) and `check` (the field check and upstream's wording
of its verdicts). This module states the public API.
"""

from __future__ import annotations

from inplace.registry.schema.builtin import component_name, model_struct
from inplace.registry.schema.check import (
    FieldReport,
    check_fields,
    go_type,
    strict_decoding_error,
    unknown_field_warnings,
)
from inplace.registry.schema.crds import CRD_FILES, crd, crd_schema, is_crd, vpa_crd
from inplace.registry.schema.roots import kind_schema, list_schema
from inplace.registry.schema.types import (
    API_VERSION_DOC,
    FIELDS_V1_NAME,
    INT_OR_STRING_NAME,
    KIND_DOC,
    META,
    MICRO_TIME_NAME,
    OBJECT_META_DOC,
    QUANTITY_NAME,
    RAW_EXTENSION_NAME,
    TIME_NAME,
    Field,
    Struct,
    Tag,
    Type,
)

__all__ = [
    "API_VERSION_DOC",
    "CRD_FILES",
    "FIELDS_V1_NAME",
    "INT_OR_STRING_NAME",
    "KIND_DOC",
    "META",
    "MICRO_TIME_NAME",
    "OBJECT_META_DOC",
    "QUANTITY_NAME",
    "RAW_EXTENSION_NAME",
    "TIME_NAME",
    "Field",
    "FieldReport",
    "Struct",
    "Tag",
    "Type",
    "check_fields",
    "component_name",
    "crd",
    "crd_schema",
    "go_type",
    "is_crd",
    "kind_schema",
    "list_schema",
    "model_struct",
    "strict_decoding_error",
    "unknown_field_warnings",
    "vpa_crd",
]
