"""Leader election on a ``coordination.k8s.io/v1`` Lease, with client-go's semantics
(``tools/leaderelection`` with a ``LeaseLock``), so replicas of one component run its work
in exactly one of them and a standby takes over within the lease duration when the leader
dies.

* A candidate tries every ``retry_period`` to acquire the Lease: it is free when absent, when
  its holder is empty (released), or when the record has not changed for
  ``lease_duration`` *as observed on this candidate's own clock* (client-go's
  ``observedTime``: clocks of different machines are never compared).
* The leader renews every ``retry_period``; if no renewal succeeds for ``renew_deadline``
  it stops leading (its work is cancelled) and :meth:`LeaderElector.run` returns — as
  client-go's ``OnStoppedLeading``, after which a component exits and is restarted.
* Every write is a compare-and-swap on the Lease's resourceVersion, so two candidates can
  never both believe they acquired it.
* ``release_on_cancel``: a leader that stops cleanly empties the holder (and sets the
  duration to 1 s) so a standby takes over at once instead of after a lease duration.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from inplace.api.timestamps import rfc3339_micro

from .api import LEASES, Client
from .errors import APIConflictError, APIError, APINotFoundError

__all__ = ["LeaderElectionConfig", "LeaderElector"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LeaderElectionConfig:
    """client-go's defaults (kube-controller-manager's ``--leader-elect-*`` flags)."""

    name: str
    namespace: str
    identity: str
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    release_on_cancel: bool = True

    def __post_init__(self) -> None:
        if not self.lease_duration > self.renew_deadline > self.retry_period > 0:
            raise ValueError(
                "leader election needs lease_duration > renew_deadline > retry_period > 0"
            )
        if not self.identity:
            raise ValueError("leader election needs an identity")


class LeaderElector:
    """Acquires and holds one Lease for one identity; see the module docstring."""

    def __init__(
        self,
        client: Client,
        config: LeaderElectionConfig,
        *,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.config = config
        self.monotonic = monotonic
        self._observed: dict[str, Any] | None = None
        """The Lease's spec as last read or written."""
        self._observed_at = 0.0
        """When (this process's monotonic clock) the observed spec last changed."""
        self._leader = False

    @property
    def is_leader(self) -> bool:
        return self._leader

    @property
    def holder(self) -> str | None:
        """Who holds the Lease, as last observed."""
        return None if self._observed is None else self._observed.get("holderIdentity") or None

    async def run(self, lead: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Wait to acquire the Lease, then run ``lead()`` while renewing it. Returns when
        leadership is lost (``lead`` cancelled) or when ``lead`` returns; cancelling ``run``
        stops leading and, with ``release_on_cancel``, releases the Lease."""
        while not await self._try_acquire_or_renew():
            await asyncio.sleep(self.config.retry_period)
        self._leader = True
        log.info("%s: became leader of lease %s", self.config.identity, self._lease_key)
        work = asyncio.create_task(lead(), name=f"leader:{self.config.name}")
        renewal = asyncio.create_task(self._renew_until_lost(), name="lease-renewal")
        try:
            done, _ = await asyncio.wait({work, renewal}, return_when=asyncio.FIRST_COMPLETED)
            if work in done:
                work.result()
            else:
                log.warning("%s: lost lease %s; stopping", self.config.identity, self._lease_key)
        finally:
            self._leader = False
            for task in (work, renewal):
                task.cancel()
            for task in (work, renewal):
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
            if self.config.release_on_cancel:
                with contextlib.suppress(APIError, ConnectionError):
                    await asyncio.shield(self._release())

    @property
    def _lease_key(self) -> str:
        return f"{self.config.namespace}/{self.config.name}"

    async def _renew_until_lost(self) -> None:
        last = self.monotonic()
        while True:
            await asyncio.sleep(self.config.retry_period)
            try:
                renewed = await self._try_acquire_or_renew()
            except (APIError, ConnectionError) as exc:
                log.info("%s: renewing %s failed: %s", self.config.identity, self._lease_key, exc)
                renewed = False
            if renewed:
                last = self.monotonic()
            elif self.monotonic() - last >= self.config.renew_deadline:
                return

    def _observe(self, spec: dict[str, Any]) -> None:
        if spec != self._observed:
            self._observed = dict(spec)
            self._observed_at = self.monotonic()

    async def _try_acquire_or_renew(self) -> bool:
        """client-go's ``tryAcquireOrRenew``: True when this identity holds the Lease now."""
        cfg = self.config
        now = rfc3339_micro()
        try:
            lease = await self.client.get(LEASES, cfg.name, namespace=cfg.namespace)
        except APINotFoundError:
            fresh: dict[str, Any] = {
                "holderIdentity": cfg.identity,
                "leaseDurationSeconds": int(cfg.lease_duration),
                "acquireTime": now,
                "renewTime": now,
                "leaseTransitions": 0,
            }
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": cfg.name, "namespace": cfg.namespace},
                "spec": fresh,
            }
            try:
                await self.client.create(LEASES, body, namespace=cfg.namespace)
            except APIConflictError:
                return False  # another candidate created it first
            self._observe(fresh)
            return True
        spec: dict[str, Any] = dict(lease.get("spec") or {})
        self._observe(spec)
        holder = spec.get("holderIdentity") or ""
        duration = float(spec.get("leaseDurationSeconds") or cfg.lease_duration)
        if holder and holder != cfg.identity and self._observed_at + duration > self.monotonic():
            return False  # held, and renewed within its duration as seen from here
        new = dict(spec)
        new["holderIdentity"] = cfg.identity
        new["leaseDurationSeconds"] = int(cfg.lease_duration)
        new["renewTime"] = now
        if holder != cfg.identity:
            new["acquireTime"] = now
            new["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1
        body = {**lease, "spec": new}
        try:
            await self.client.update(LEASES, body, namespace=cfg.namespace)
        except (APIConflictError, APINotFoundError):
            return False  # changed under us: read again on the next try
        self._observe(new)
        return True

    async def _release(self) -> None:
        """Empty the holder if this identity still holds the Lease."""
        cfg = self.config
        lease = await self.client.get(LEASES, cfg.name, namespace=cfg.namespace)
        spec = dict(lease.get("spec") or {})
        if spec.get("holderIdentity") != cfg.identity:
            return
        spec.update(holderIdentity="", leaseDurationSeconds=1, renewTime=rfc3339_micro())
        with contextlib.suppress(APIConflictError):
            await self.client.update(LEASES, {**lease, "spec": spec}, namespace=cfg.namespace)
