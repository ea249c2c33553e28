"""Compare-and-swap under concurrent read-modify-write: linearizable, no lost updates."""

from __future__ import annotations

import asyncio
import itertools
import random

from inplace.store import ConflictError, Store


async def test_concurrent_increments(store: Store) -> None:
    key = "/counters/default/c"
    await store.create(key, {"n": 0})
    successes: list[tuple[int, int]] = []  # (expected revision used, new revision)
    conflicts = 0
    rng = random.Random(7)

    async def worker(increments: int) -> None:
        nonlocal conflicts
        entry = await store.get(key)
        assert entry is not None
        value, revision = entry.value, entry.revision
        done = 0
        while done < increments:
            if rng.random() < 0.3:
                await asyncio.sleep(0)  # vary the interleaving
            try:
                updated = await store.update(key, {"n": value["n"] + 1}, expected_revision=revision)
            except ConflictError as exc:
                conflicts += 1
                assert exc.current is not None
                value, revision = exc.current, exc.current_revision
                assert exc.current["metadata"]["resourceVersion"] == str(revision)
                continue
            successes.append((revision, updated.revision))
            value, revision = updated.value, updated.revision
            done += 1

    workers, per_worker = 10, 40
    await asyncio.gather(*(worker(per_worker) for _ in range(workers)))
    final = await store.get(key)
    assert final is not None
    assert final.value["n"] == len(successes) == workers * per_worker
    used = [expected for expected, _ in successes]
    assert len(set(used)) == len(used), "two successful updates shared an expected revision"
    # The successful updates form one chain: each one's expected revision is the previous one's.
    chain = sorted(successes, key=lambda s: s[1])
    assert chain[0][0] == 1
    for (_, before), (expected, _) in itertools.pairwise(chain):
        assert expected == before
    assert conflicts > 0, "the test should have produced contention"
    events = store.watch(key, from_revision=1)
    seen = [(await anext(events)).value["n"] for _ in range(len(successes))]
    assert seen == list(range(1, len(successes) + 1))
    await events.aclose()
