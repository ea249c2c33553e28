"""Kubernetes resources → cgroup values, exactly as kubelet converts them.

Pure integer functions (milli-CPU and bytes in, kernel units out) so that every node, the
scheduler's accounting and the tests agree with upstream to the unit. Sources, upstream
kubernetes:

* ``pkg/kubelet/cm/helpers_linux.go``: ``MilliCPUToShares`` (0 → ``MinShares`` 2, clamp to
  [2, 262144]), ``MilliCPUToQuota`` (0 → no quota, minimum 1000 µs), ``ResourceConfigForPod``
  (pod-level cgroup values), and back: ``SharesToMilliCPU``, ``QuotaToMilliCPU`` (what the
  kubelet reports a pod cgroup's values as);
* ``pkg/kubelet/kuberuntime/kuberuntime_container_linux.go``: container shares come from the
  request, or from the limit when only a limit is set;
* the cgroup v2 weight conversion kubelet takes from runc/libcontainer
  (``1 + ((shares - 2) * 9999) // 262142``) and its inverse for reading ``cpu.weight`` back.

``None`` (or 0) as a limit means "not set". Requests default to limits when only a limit is
set, as the API server's defaulting (and kubelet, for old objects) does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .base import DEFAULT_CPU_PERIOD_US, CgroupResources

__all__ = [
    "MAX_SHARES",
    "MIN_MILLI_CPU_LIMIT",
    "MIN_QUOTA_US",
    "MIN_SHARES",
    "ContainerSizing",
    "container_resources",
    "milli_cpu_to_quota",
    "milli_cpu_to_shares",
    "pod_resources",
    "quota_to_milli_cpu",
    "shares_to_milli_cpu",
    "shares_to_weight",
    "weight_to_shares",
]

MIN_SHARES = 2
MAX_SHARES = 262144
SHARES_PER_CPU = 1024
MILLI_CPU_TO_CPU = 1000
MIN_QUOTA_US = 1000
"""The kernel refuses a CFS quota below 1 ms."""
MIN_MILLI_CPU_LIMIT = 10
"""The smallest CPU limit a quota expresses (1000 µs of a 100 ms period): kubelet's
``MinMilliCPULimit``."""
MIN_WEIGHT = 1
MAX_WEIGHT = 10000


def milli_cpu_to_shares(milli: int) -> int:
    """``cpu.shares`` for a CPU request; 0 (no request) is the minimum, 2, not the kernel
    default 1024, so that a pod without requests really gets the least weight."""
    if milli <= 0:
        return MIN_SHARES
    shares = (milli * SHARES_PER_CPU) // MILLI_CPU_TO_CPU
    return max(MIN_SHARES, min(MAX_SHARES, shares))


def milli_cpu_to_quota(milli: int, period_us: int = DEFAULT_CPU_PERIOD_US) -> int:
    """``cpu.cfs_quota_us`` for a CPU limit over ``period_us``; 0 means no limit and returns 0
    (callers map that to unlimited), anything else is at least 1000 µs."""
    if milli <= 0:
        return 0
    quota = (milli * period_us) // MILLI_CPU_TO_CPU
    return max(MIN_QUOTA_US, quota)


def shares_to_milli_cpu(shares: int) -> int:
    """The CPU request ``cpu.shares`` stands for (``SharesToMilliCPU``: ``shares * 1000 /
    1024`` rounded up), 0 below ``MinShares``."""
    if shares < MIN_SHARES:
        return 0
    return -(-(shares * MILLI_CPU_TO_CPU) // SHARES_PER_CPU)


def quota_to_milli_cpu(quota_us: int | None, period_us: int) -> int:
    """The CPU limit a CFS quota stands for (``QuotaToMilliCPU``); 0 for no quota."""
    if quota_us is None or quota_us < 0 or period_us <= 0:
        return 0
    return (quota_us * MILLI_CPU_TO_CPU) // period_us


def shares_to_weight(shares: int) -> int:
    """cgroup v1 ``cpu.shares`` [2, 262144] → v2 ``cpu.weight`` [1, 10000] (linear map)."""
    shares = max(MIN_SHARES, min(MAX_SHARES, shares))
    return 1 + ((shares - 2) * 9999) // 262142


def weight_to_shares(weight: int) -> int:
    """The smallest shares that :func:`shares_to_weight` maps to ``weight``, so that
    weight → shares → weight is exact. Shares → weight is lossy (1024 → 39 → 999)."""
    weight = max(MIN_WEIGHT, min(MAX_WEIGHT, weight))
    return 2 + -(-((weight - 1) * 262142) // 9999)


def _quota_or_none(limit_milli: int | None, period_us: int) -> int | None:
    if not limit_milli or limit_milli <= 0:
        return None
    return milli_cpu_to_quota(limit_milli, period_us)


def container_resources(
    requests_cpu_milli: int | None,
    limits_cpu_milli: int | None,
    limits_memory: int | None,
    *,
    period_us: int = DEFAULT_CPU_PERIOD_US,
) -> CgroupResources:
    """A container cgroup's values: shares from the request (or the limit when only a limit
    is set), quota and memory limit only when those limits are set."""
    if not requests_cpu_milli and limits_cpu_milli:
        shares = milli_cpu_to_shares(limits_cpu_milli)
    else:
        shares = milli_cpu_to_shares(requests_cpu_milli or 0)
    return CgroupResources(
        cpu_shares=shares,
        cpu_quota_us=_quota_or_none(limits_cpu_milli, period_us),
        cpu_period_us=period_us,
        memory_limit_bytes=limits_memory if limits_memory and limits_memory > 0 else None,
    )


@dataclass(frozen=True)
class ContainerSizing:
    """One container's requests and limits in integer units (milli-CPU, bytes); ``None`` = unset."""

    requests_cpu_milli: int | None = None
    limits_cpu_milli: int | None = None
    requests_memory: int | None = None
    limits_memory: int | None = None

    @property
    def effective_requests_cpu(self) -> int:
        """The request, defaulted to the limit when only a limit is set."""
        return self.requests_cpu_milli or self.limits_cpu_milli or 0

    @property
    def effective_requests_memory(self) -> int:
        return self.requests_memory or self.limits_memory or 0

    @property
    def is_best_effort(self) -> bool:
        return not (
            self.requests_cpu_milli
            or self.limits_cpu_milli
            or self.requests_memory
            or self.limits_memory
        )


def pod_resources(
    containers: Sequence[ContainerSizing],
    *,
    init_containers: Sequence[ContainerSizing] = (),
    period_us: int = DEFAULT_CPU_PERIOD_US,
) -> CgroupResources:
    """The pod cgroup's values (upstream ``ResourceConfigForPod``).

    Requests and limits are the pod's effective ones: the sum over the app containers, or the
    largest init container's when that is larger (init containers run one at a time, before
    the app containers). Then:

    * BestEffort (nothing set anywhere): shares 2, nothing else;
    * otherwise shares from the summed CPU requests; a CPU quota only if *every* app container
      has a CPU limit, a memory limit only if every app container has a memory limit
      (a container without a limit can use the whole node, so the pod cannot be capped).
      Guaranteed pods satisfy both conditions by definition.
    """
    everyone = [*containers, *init_containers]
    if all(c.is_best_effort for c in everyone):
        return CgroupResources(cpu_shares=MIN_SHARES, cpu_quota_us=None, cpu_period_us=period_us)

    def effective(values_app: list[int], values_init: list[int]) -> int:
        return max(sum(values_app), max(values_init, default=0))

    cpu_requests = effective(
        [c.effective_requests_cpu for c in containers],
        [c.effective_requests_cpu for c in init_containers],
    )
    cpu_limits_declared = bool(containers) and all(c.limits_cpu_milli for c in containers)
    memory_limits_declared = bool(containers) and all(c.limits_memory for c in containers)

    quota: int | None = None
    if cpu_limits_declared:
        cpu_limits = effective(
            [c.limits_cpu_milli or 0 for c in containers],
            [c.limits_cpu_milli or 0 for c in init_containers],
        )
        quota = _quota_or_none(cpu_limits, period_us)
    memory: int | None = None
    if memory_limits_declared:
        memory = effective(
            [c.limits_memory or 0 for c in containers],
            [c.limits_memory or 0 for c in init_containers],
        )
    return CgroupResources(
        cpu_shares=milli_cpu_to_shares(cpu_requests),
        cpu_quota_us=quota,
        cpu_period_us=period_us,
        memory_limit_bytes=memory,
    )
