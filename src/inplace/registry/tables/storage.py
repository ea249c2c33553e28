"""PersistentVolumes, PersistentVolumeClaims and StorageClasses: upstream's printers
(``printPersistentVolume``, ``printPersistentVolumeClaim``, ``printStorageClass``)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final

from inplace.api.storage import access_modes_text, claim_class, is_default_class
from inplace.api.tables.printer import (
    AGE_COLUMN,
    NAME_COLUMN,
    Column,
    Row,
    TablePrinter,
    age,
    get_path,
    name_of,
    text_at,
)

__all__ = ["PERSISTENT_VOLUME_CLAIM_TABLE", "PERSISTENT_VOLUME_TABLE", "STORAGE_CLASS_TABLE"]

_UNSET: Final = "<unset>"


def _phase(obj: Mapping[str, Any]) -> str:
    if get_path(obj, "metadata", "deletionTimestamp"):
        return "Terminating"
    return text_at(obj, "status", "phase")


def _optional(obj: Mapping[str, Any], *path: str) -> str:
    value = get_path(obj, *path)
    return str(value) if value is not None else _UNSET


def _print_pv(pv: Mapping[str, Any], now: datetime) -> Row:
    ref = get_path(pv, "spec", "claimRef")
    claim = ""
    if isinstance(ref, Mapping):
        claim = f"{ref.get('namespace') or ''}/{ref.get('name') or ''}"
    capacity = get_path(pv, "spec", "capacity", "storage")
    cells = [
        name_of(pv),
        str(capacity) if capacity is not None else "0",
        access_modes_text(get_path(pv, "spec", "accessModes")),
        text_at(pv, "spec", "persistentVolumeReclaimPolicy"),
        _phase(pv),
        claim,
        text_at(pv, "spec", "storageClassName"),
        _optional(pv, "spec", "volumeAttributesClassName"),
        text_at(pv, "status", "reason"),
        age(pv, now),
        _optional(pv, "spec", "volumeMode"),
    ]
    return cells, None


def _print_pvc(pvc: Mapping[str, Any], now: datetime) -> Row:
    capacity = modes = ""
    if get_path(pvc, "spec", "volumeName"):
        modes = access_modes_text(get_path(pvc, "status", "accessModes"))
        value = get_path(pvc, "status", "capacity", "storage")
        capacity = str(value) if value is not None else "0"
    cells = [
        name_of(pvc),
        _phase(pvc),
        text_at(pvc, "spec", "volumeName"),
        capacity,
        modes,
        claim_class(pvc),
        _optional(pvc, "spec", "volumeAttributesClassName"),
        age(pvc, now),
        _optional(pvc, "spec", "volumeMode"),
    ]
    return cells, None


def _print_storage_class(sc: Mapping[str, Any], now: datetime) -> Row:
    name = name_of(sc)
    if is_default_class(sc):
        name += " (default)"
    expansion = get_path(sc, "allowVolumeExpansion")
    cells = [
        name,
        text_at(sc, "provisioner"),
        text_at(sc, "reclaimPolicy") or "Delete",
        text_at(sc, "volumeBindingMode") or "Immediate",
        "true" if expansion is True else "false",
        age(sc, now),
    ]
    return cells, None


PERSISTENT_VOLUME_TABLE: Final = TablePrinter(
    (
        NAME_COLUMN,
        Column(
            "Capacity",
            "string",
            "capacity is the description of the persistent volume's resources and capacity.",
        ),
        Column(
            "Access Modes", "string", "accessModes contains all ways the volume can be mounted."
        ),
        Column(
            "Reclaim Policy",
            "string",
            "persistentVolumeReclaimPolicy defines what happens "
            "to a persistent volume when released from its claim.",
        ),
        Column(
            "Status",
            "string",
            "phase indicates if a volume is available, bound to a claim, or released by a claim.",
        ),
        Column(
            "Claim",
            "string",
            "claimRef is part of a bi-directional binding between "
            "PersistentVolume and PersistentVolumeClaim.",
        ),
        Column("StorageClass", "string", "StorageClass of the pv"),
        Column("VolumeAttributesClass", "string", "VolumeAttributesClass of the pv"),
        Column(
            "Reason",
            "string",
            "reason is a brief CamelCase string that describes any "
            "failure and is meant for machine parsing and tidy display in the CLI.",
        ),
        AGE_COLUMN,
        Column(
            "VolumeMode",
            "string",
            "volumeMode defines if a volume is intended to be used "
            "with a formatted filesystem or to remain in raw block state.",
            priority=1,
        ),
    ),
    _print_pv,
)
PERSISTENT_VOLUME_CLAIM_TABLE: Final = TablePrinter(
    (
        NAME_COLUMN,
        Column("Status", "string", "phase represents the current phase of PersistentVolumeClaim."),
        Column(
            "Volume",
            "string",
            "volumeName is the binding reference to the PersistentVolume backing this claim.",
        ),
        Column(
            "Capacity",
            "string",
            "capacity represents the actual resources of the underlying volume.",
        ),
        Column(
            "Access Modes",
            "string",
            "accessModes contains the actual access modes the volume backing the PVC has.",
        ),
        Column("StorageClass", "string", "StorageClass of the pvc"),
        Column("VolumeAttributesClass", "string", "VolumeAttributesClass of the pvc"),
        AGE_COLUMN,
        Column(
            "VolumeMode",
            "string",
            "volumeMode defines what type of volume is required by the claim.",
            priority=1,
        ),
    ),
    _print_pvc,
)
STORAGE_CLASS_TABLE: Final = TablePrinter(
    (
        NAME_COLUMN,
        Column("Provisioner", "string", "provisioner indicates the type of the provisioner."),
        Column(
            "ReclaimPolicy",
            "string",
            "reclaimPolicy controls the reclaimPolicy for "
            "dynamically provisioned PersistentVolumes of this storage class.",
        ),
        Column(
            "VolumeBindingMode",
            "string",
            "volumeBindingMode indicates how "
            "PersistentVolumeClaims should be provisioned and bound.",
        ),
        Column(
            "AllowVolumeExpansion",
            "string",
            "allowVolumeExpansion shows whether the storage class allow volume expand.",
        ),
        AGE_COLUMN,
    ),
    _print_storage_class,
)
