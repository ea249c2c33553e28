"""What a kind served from a CustomResourceDefinition carries beyond a built-in kind.

A CRD serves one kind per served version; each :class:`~inplace.registry.kinds.Kind` made from it
holds a :class:`CustomResource`: that version's schema (from which the field check, OpenAPI,
field management, defaulting and pruning are derived, as for the VPA's transcribed schema),
the names upstream gives the kind, its printer columns, its scale paths and whether it is the
storage version. It is plain data; the API server's `crds` package builds it from a CRD.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ScalePaths:
    """The `scale` subresource's JSON paths (upstream's CustomResourceSubresourceScale)."""

    spec_replicas: str
    status_replicas: str
    label_selector: str | None = None


@dataclass(frozen=True)
class CustomResource:
    """One served version of a CRD, as the kind built from it needs it."""

    #: The CRD's name, `<plural>.<group>`.
    crd_name: str
    singular: str
    list_kind: str
    #: The version's `openAPIV3Schema` (its root), as stored in the CRD.
    schema: Mapping[str, Any] = field(compare=False)
    #: Whether objects are stored in this version (the one version marked `storage`).
    storage: bool = False
    #: The version objects are stored in.
    storage_version: str = ""
    #: `additionalPrinterColumns` as stored (name, type, format, description, priority,
    #: jsonPath).
    printer_columns: tuple[Mapping[str, Any], ...] = field(default=(), compare=False)
    scale: ScalePaths | None = None
    #: `deprecated` and the warning sent with every request for this version.
    deprecation_warning: str | None = None
    #: `selectableFields`' JSON paths (".spec.color"), served as field selectors.
    selectable_fields: tuple[str, ...] = ()
