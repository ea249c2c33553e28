"""Roles, ClusterRoles and their bindings (upstream ``printRole``, ``printRoleBinding``...):
roles show when they were created, bindings the role they grant and, wide, their subjects."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final

from inplace.api.tables.printer import (
    AGE_COLUMN,
    AGE_DOC,
    NAME_COLUMN,
    Column,
    Row,
    TablePrinter,
    age,
    get_path,
    list_at,
    name_of,
    parse_time,
    text_at,
)

_ROLE_COLUMNS: Final = (NAME_COLUMN, Column("Created At", "date", AGE_DOC))


def _print_role(obj: Mapping[str, Any], now: datetime) -> Row:
    created = parse_time(get_path(obj, "metadata", "creationTimestamp"))
    stamp = created.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if created else ""
    return [name_of(obj), stamp], None


def subjects_strings(subjects: list[Mapping[str, Any]]) -> tuple[list[str], list[str], list[str]]:
    """Upstream ``SubjectsStrings``: users, groups and ``namespace/name`` service accounts."""
    users: list[str] = []
    groups: list[str] = []
    accounts: list[str] = []
    for subject in subjects:
        name = subject.get("name") if isinstance(subject.get("name"), str) else ""
        kind = subject.get("kind")
        if kind == "ServiceAccount":
            accounts.append(f"{subject.get('namespace') or ''}/{name}")
        elif kind == "User":
            users.append(str(name))
        elif kind == "Group":
            groups.append(str(name))
    return users, groups, accounts


def _binding_columns(role_ref_doc: str) -> tuple[Column, ...]:
    return (
        NAME_COLUMN,
        Column("Role", "string", role_ref_doc),
        AGE_COLUMN,
        Column("Users", "string", "Users in the roleBinding", priority=1),
        Column("Groups", "string", "Groups in the roleBinding", priority=1),
        Column("ServiceAccounts", "string", "ServiceAccounts in the roleBinding", priority=1),
    )


def _print_binding(obj: Mapping[str, Any], now: datetime) -> Row:
    role = f"{text_at(obj, 'roleRef', 'kind')}/{text_at(obj, 'roleRef', 'name')}"
    users, groups, accounts = subjects_strings(list_at(obj, "subjects"))
    return [
        name_of(obj),
        role,
        age(obj, now),
        ", ".join(users),
        ", ".join(groups),
        ", ".join(accounts),
    ], None


ROLE_TABLE: Final = TablePrinter(_ROLE_COLUMNS, _print_role)
CLUSTER_ROLE_TABLE: Final = TablePrinter(_ROLE_COLUMNS, _print_role)
ROLE_BINDING_TABLE: Final = TablePrinter(
    _binding_columns(
        "RoleRef can reference a Role in the current namespace or a ClusterRole in the global "
        "namespace. If the RoleRef cannot be resolved, the Authorizer must return an error. "
        "This field is immutable."
    ),
    _print_binding,
)
CLUSTER_ROLE_BINDING_TABLE: Final = TablePrinter(
    _binding_columns(
        "RoleRef can only reference a ClusterRole in the global namespace. If the RoleRef "
        "cannot be resolved, the Authorizer must return an error. This field is immutable."
    ),
    _print_binding,
)
