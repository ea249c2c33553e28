"""Node selector terms (``nodeAffinity.required.nodeSelectorTerms``), as upstream's
``MatchNodeSelectorTerms`` reads them: shared by the scheduler's NodeAffinity filter, its
volume binding plugin (a volume's node affinity) and the PersistentVolume controller.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["match_node_selector_terms"]


def _int(text: Any) -> int | None:
    try:
        return int(str(text))
    except ValueError:
        return None


def _match_expression(expr: Mapping[str, Any], values_of: Mapping[str, str]) -> bool:
    key = expr.get("key") or ""
    op = expr.get("operator") or ""
    values = [str(v) for v in expr.get("values") or ()]
    present = key in values_of
    if op == "In":
        return present and values_of[key] in values
    if op == "NotIn":
        return not present or values_of[key] not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt"):
        if not present or len(values) != 1:
            return False
        have, want = _int(values_of[key]), _int(values[0])
        if have is None or want is None:
            return False
        return have > want if op == "Gt" else have < want
    return False


def match_node_selector_terms(
    terms: Sequence[Mapping[str, Any]], labels: Mapping[str, str], node_name: str
) -> bool:
    """upstream ``MatchNodeSelectorTerms``: the terms are ORed, a term's requirements ANDed;
    a term with no requirements matches nothing."""
    fields = {"metadata.name": node_name}
    for term in terms:
        exprs = term.get("matchExpressions") or ()
        field_exprs = term.get("matchFields") or ()
        if not exprs and not field_exprs:
            continue
        if all(_match_expression(e, labels) for e in exprs) and all(
            _match_expression(e, fields) for e in field_exprs
        ):
            return True
    return False
