"""The ``inplace.dev/usage-profile`` annotation: the usage a simulated node reports for a pod.

The value is JSON, one profile for every container or an object of profiles keyed by
container name. A profile is one of:

* constant — ``{"cpu": "250m", "memory": "100Mi"}``;
* ramp — ``{"ramp": {"from": {"cpu": "100m", "memory": "50Mi"},
  "to": {"cpu": "1", "memory": "1Gi"}, "seconds": 600}}``;
* points — ``{"points": [[0, "100m", "50Mi"], [60, "300m", "80Mi"]]}`` (seconds since the
  container started, interpolated linearly, constant after the last point).

CPU and memory are quantities. The API server validates the annotation on pods and pod
templates with :func:`profile_errors` (a bad value is a 422 naming it); simulated nodes read
it with :func:`profile_for`. The parsing lives here, in the API layer, so both agree.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from inplace.api.annotations import USAGE_PROFILE
from inplace.api.quantity import Quantity, QuantityError

__all__ = ["UsageProfile", "parse_profile", "parse_profiles", "profile_errors", "profile_for"]

_CONSTANT_KEYS: Final = frozenset({"cpu", "memory"})
_RAMP_KEYS: Final = frozenset({"from", "to", "seconds"})


@dataclass(frozen=True)
class UsageProfile:
    """CPU (milli-cores) and memory (bytes) over time since the container started: points
    ``(seconds, cpu, memory)``, linearly interpolated, constant after the last one."""

    points: tuple[tuple[float, int, int], ...]

    def at(self, elapsed: float) -> tuple[int, int]:
        pts = self.points
        if not pts:
            return (0, 0)
        if elapsed <= pts[0][0]:
            return pts[0][1], pts[0][2]
        for (t0, c0, m0), (t1, c1, m1) in itertools.pairwise(pts):
            if t0 <= elapsed <= t1:
                f = 0.0 if t1 == t0 else (elapsed - t0) / (t1 - t0)
                return int(c0 + (c1 - c0) * f), int(m0 + (m1 - m0) * f)
        return pts[-1][1], pts[-1][2]


def _quantity(value: Any, what: str) -> Quantity:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError(f"{what} must be a quantity")
    try:
        return Quantity.parse(value)
    except QuantityError as exc:
        raise ValueError(f"{what}: {exc.reason}") from None


def _seconds(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ValueError(f"{what} must be a number of seconds, at least 0")
    return float(value)


def _usage(raw: Any, what: str) -> tuple[int, int]:
    if not isinstance(raw, Mapping):
        raise ValueError(f"{what} must be an object with cpu and memory")
    unknown = sorted(set(raw) - _CONSTANT_KEYS)
    if unknown:
        raise ValueError(f"{what}: unknown field {unknown[0]!r} (cpu and memory are known)")
    cpu = _quantity(raw.get("cpu", 0), f"{what}.cpu").milli_value()
    memory = _quantity(raw.get("memory", 0), f"{what}.memory").value()
    return cpu, memory


def parse_profile(raw: Any) -> UsageProfile:
    """One profile from its JSON value (see the module docstring); ValueError saying what is
    wrong for anything else."""
    if not isinstance(raw, Mapping):
        raise ValueError("a usage profile is a JSON object")
    if "points" in raw:
        if set(raw) != {"points"}:
            raise ValueError("a points profile has only 'points'")
        items = raw["points"]
        if not isinstance(items, list) or not items:
            raise ValueError("points must be a non-empty list")
        points = []
        for i, item in enumerate(items):
            if not isinstance(item, Sequence) or isinstance(item, str) or len(item) != 3:
                raise ValueError(f"points[{i}] must be [seconds, cpu, memory]")
            points.append(
                (
                    _seconds(item[0], f"points[{i}][0]"),
                    _quantity(item[1], f"points[{i}][1]").milli_value(),
                    _quantity(item[2], f"points[{i}][2]").value(),
                )
            )
        points.sort(key=lambda p: p[0])
        return UsageProfile(tuple(points))
    if "ramp" in raw:
        if set(raw) != {"ramp"}:
            raise ValueError("a ramp profile has only 'ramp'")
        ramp = raw["ramp"]
        if not isinstance(ramp, Mapping):
            raise ValueError("ramp must be an object with from, to and seconds")
        unknown = sorted(set(ramp) - _RAMP_KEYS)
        if unknown:
            raise ValueError(f"ramp: unknown field {unknown[0]!r}")
        start = _usage(ramp.get("from") or {}, "ramp.from")
        end = _usage(ramp.get("to") or {}, "ramp.to")
        seconds = _seconds(ramp.get("seconds", 60), "ramp.seconds")
        return UsageProfile(((0.0, *start), (seconds, *end)))
    return UsageProfile(((0.0, *_usage(raw, "the profile")),))


def _is_single(raw: Mapping[str, Any]) -> bool:
    """One profile for every container, unless every value is an object (by container)."""
    if not raw or set(raw) <= _CONSTANT_KEYS or "ramp" in raw or "points" in raw:
        return True
    return not all(isinstance(v, Mapping) for v in raw.values())


def parse_profiles(text: str) -> dict[str | None, UsageProfile]:
    """The annotation's profiles: ``{None: profile}`` for one that every container follows,
    else one per container name. ValueError saying what is wrong."""
    try:
        raw = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise ValueError(f"must be JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise ValueError("must be a JSON object: a profile, or profiles by container name")
    if _is_single(raw):
        return {None: parse_profile(raw)}
    profiles: dict[str | None, UsageProfile] = {}
    for name, value in raw.items():
        try:
            profiles[str(name)] = parse_profile(value)
        except ValueError as exc:
            raise ValueError(f"container {name!r}: {exc}") from None
    return profiles


def profile_errors(text: object, containers: Iterable[str]) -> str | None:
    """Why the annotation's value is not valid for a pod (template) with these container
    names, or None."""
    if not isinstance(text, str):
        return "must be a string holding JSON"
    try:
        profiles = parse_profiles(text)
    except ValueError as exc:
        return str(exc)
    known = set(containers)
    for name in profiles:
        if name is not None and name not in known:
            return f"no container named {name!r} in this pod"
    return None


def profile_for(pod: Mapping[str, Any], container: str) -> UsageProfile | None:
    """The pod's profile for `container`; None without a (valid) annotation."""
    text = ((pod.get("metadata") or {}).get("annotations") or {}).get(USAGE_PROFILE)
    if not text:
        return None
    try:
        profiles = parse_profiles(text)
    except ValueError:
        return None
    return profiles.get(container) or profiles.get(None)
