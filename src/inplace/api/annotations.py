"""Every annotation and label this project defines, in one place, with its format.

Upstream's names are used wherever upstream has one; these are our additions, all under the
``inplace.dev/`` prefix. docs/user-guide.md lists them for users; validation rejects a bad
value with a 422 that names the annotation.
"""

from __future__ import annotations

from typing import Final

PREFIX: Final = "inplace.dev/"

# -- on pods and pod templates ---------------------------------------------------------------

RESIZE_POLICY: Final = "inplace.dev/resize-policy"
"""How a resize that does not fit its node is handled: ``InPlaceOnly`` (the default: wait,
never evict), ``InPlacePreferred`` (evict through the Eviction API, respecting disruption
budgets, so the owner recreates the pod where it fits) or ``Restart`` (restart the
containers to apply any resize)."""

RESIZE_POLICIES: Final = ("InPlaceOnly", "InPlacePreferred", "Restart")

OOM_KILL_DISABLE: Final = "inplace.dev/oom-kill-disable"
"""``"true"``: pause the pod's tasks at the memory limit instead of OOM-killing them, until a
resize raises the limit. ``"false"`` (the default) keeps the kernel's behaviour."""

USAGE_PROFILE: Final = "inplace.dev/usage-profile"
"""JSON: the usage a simulated node reports for the pod's containers: one profile for all,
or an object of profiles by container name. A profile is constant (``{"cpu": "250m",
"memory": "100Mi"}``), a ramp (``{"ramp": {"from": {...}, "to": {...}, "seconds": 600}}``)
or points (``{"points": [[0, "100m", "50Mi"], [60, "300m", "80Mi"]]}``, seconds since the
container started). Parsed and validated by :mod:`inplace.api.usage_profile`."""

# -- on workloads (Deployments, ReplicaSets, Jobs) -------------------------------------------------

RESIZE_STATUS: Final = "inplace.dev/resize-status"
"""JSON written by the workload-resize controller: ``{"resources": F, "moved": N}``, the
fingerprint ``F`` of the template resources its pods are being brought to and how many pods
were replaced (moved to another node) rather than resized in place for them; it survives a
restart of the controller. The human-readable counts are in the ``PodsResized`` condition."""

# -- on nodes --------------------------------------------------------------------------------

SIMULATED: Final = "inplace.dev/simulated"
"""Label ``"true"`` on a node served by a simulated node agent (no processes)."""

LIMITS_ENFORCED: Final = "inplace.dev/limits-enforced"
"""``"true"`` or ``"false"``: whether the node agent can write cgroups to enforce limits."""

CGROUP_DRIVER: Final = "inplace.dev/cgroup-driver"
"""The node agent's cgroup driver: ``v1``, ``v2`` or ``none``."""

# -- written by the vertical pod autoscaler's admission step (upstream's names) ---------------

VPA_UPDATES: Final = "vpaUpdates"
"""Upstream's: what the VPA admission step changed in a new pod, ``Pod resources updated by
VPA: container 0: cpu request, memory request, memory limit; container 1: ...`` (containers
by index, resources sorted)."""

VPA_OBSERVED_CONTAINERS: Final = "vpaObservedContainers"
"""Upstream's: the names of the pod's containers when it was admitted under a VPA, joined by
``", "`` (the recommender and updater of upstream use it to tell containers added later)."""
