"""Whether a pod fits a node: the pure rules the scheduler's filters and the rescuer share.

The scheduler (``scheduler/plugins/``) applies these to every node at once from its numpy
cache; the rescue controller (``controllers/rescue/``) asks the same questions of the few
nodes it considers. Components may not import one another, so the rules live here:

* room: :func:`fit_reasons` with its structured :class:`Insufficient` reasons, whose
  :attr:`~Insufficient.short` text (``Insufficient cpu``) is what ``FailedScheduling``
  messages and the ``PodScheduled`` condition count, and :func:`insufficient_resources`,
  which reads those words back out of such a message;
* taints: :func:`tolerates` (upstream ``Toleration.ToleratesTaint``) and
  :func:`untolerated_taint`;
* node affinity: :func:`match_node_selector_terms` (upstream ``MatchNodeSelectorTerms``) and
  :func:`affinity_matches` (``nodeSelector`` plus required node affinity).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from .quantity import Format, Quantity

__all__ = [
    "UNSCHEDULABLE_TAINT",
    "Insufficient",
    "affinity_matches",
    "fit_reasons",
    "format_cpu",
    "format_memory",
    "insufficient_resources",
    "match_node_selector_terms",
    "tolerates",
    "untolerated_taint",
]

UNSCHEDULABLE_TAINT: Final = "node.kubernetes.io/unschedulable"
"""The taint a ``spec.unschedulable`` node is treated as having."""


def format_cpu(milli: int) -> str:
    return str(Quantity.from_milli(milli))


def format_memory(value: int) -> str:
    return str(Quantity.from_int(value, Format.BINARY_SI))


@dataclass(frozen=True, slots=True)
class Insufficient:
    """One resource a node lacks: ``resource`` is ``cpu``, ``memory``, ``ephemeral-storage``
    or ``pods``."""

    resource: str
    requested: int
    free: int

    @property
    def short(self) -> str:
        """Upstream's reason text, counted in ``FailedScheduling`` messages."""
        return "Too many pods" if self.resource == "pods" else f"Insufficient {self.resource}"

    def __str__(self) -> str:
        if self.resource == "cpu":
            req, free = format_cpu(self.requested), format_cpu(max(self.free, 0))
        elif self.resource in ("memory", "ephemeral-storage"):
            req, free = format_memory(self.requested), format_memory(max(self.free, 0))
        else:
            req, free = str(self.requested), str(max(self.free, 0))
        return f"{self.short}: requested {req}, free {free}"


def fit_reasons(
    cpu: int,
    memory: int,
    free_cpu: int,
    free_memory: int,
    free_pods: int = 1,
    *,
    pods: int = 1,
    ephemeral_storage: int = 0,
    free_ephemeral_storage: int = 0,
) -> list[Insufficient]:
    """Why a request of ``cpu`` millicores, ``memory`` bytes, ``pods`` pod slots and
    ``ephemeral_storage`` bytes does not fit the free room given; empty when it fits, in
    upstream's order (``fitsRequest``). A zero request always fits, and a negative one (a
    shrinking resize) too."""
    out: list[Insufficient] = []
    if pods > 0 and pods > free_pods:
        out.append(Insufficient("pods", pods, free_pods))
    if cpu > 0 and cpu > free_cpu:
        out.append(Insufficient("cpu", cpu, free_cpu))
    if memory > 0 and memory > free_memory:
        out.append(Insufficient("memory", memory, free_memory))
    if ephemeral_storage > 0 and ephemeral_storage > free_ephemeral_storage:
        out.append(Insufficient("ephemeral-storage", ephemeral_storage, free_ephemeral_storage))
    return out


_INSUFFICIENT = re.compile(r"\bInsufficient (cpu|memory)\b")


def insufficient_resources(message: str) -> frozenset[str]:
    """The resources (``cpu``, ``memory``) a scheduling failure message says some node lacked:
    ``0/3 nodes are available: 1 Insufficient cpu, 2 Insufficient memory.`` → both."""
    return frozenset(_INSUFFICIENT.findall(message or ""))


# -- taints ----------------------------------------------------------------------------------


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """upstream ``Toleration.ToleratesTaint``."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    operator = toleration.get("operator") or "Equal"
    if key and key != taint.get("key"):
        return False
    if operator == "Exists":
        return True
    if operator == "Equal":
        return bool(key) and (toleration.get("value") or "") == (taint.get("value") or "")
    return False


def untolerated_taint(
    taints: Sequence[Mapping[str, Any]], tolerations: Sequence[Mapping[str, Any]]
) -> Mapping[str, Any] | None:
    """The first ``NoSchedule``/``NoExecute`` taint no toleration tolerates, if any."""
    for taint in taints:
        if taint.get("effect") not in ("NoSchedule", "NoExecute"):
            continue
        if not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None


# -- node affinity ---------------------------------------------------------------------------


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


def affinity_matches(
    node_selector: Mapping[str, str],
    required_terms: Sequence[Mapping[str, Any]] | None,
    labels: Mapping[str, str],
    node_name: str,
) -> bool:
    """``spec.nodeSelector`` and the required node affinity's terms (None: none) match."""
    for key, value in node_selector.items():
        if labels.get(key) != value:
            return False
    if required_terms is not None:
        return match_node_selector_terms(required_terms, labels, node_name)
    return True
