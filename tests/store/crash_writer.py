"""Child process for the crash test: write forever, print each acknowledged write.

Usage: python crash_writer.py PATH ROUND. Eight writers create keys (so writes group-commit)
and one bumps a counter with compare-and-swap; a line is printed (and flushed) only after the
store acknowledged the write. The parent SIGKILLs this process at an arbitrary point.
"""

from __future__ import annotations

import asyncio
import sys

from inplace.store import ConflictError, Store


async def main(path: str, round_: str) -> None:
    store = await Store.open(path)
    out = sys.stdout

    async def creator(w: int) -> None:
        n = 0
        while True:
            key = f"/crash/r{round_}/w{w}/k{n:06d}"
            await store.create(key, {"metadata": {"name": key}, "pad": "x" * 300})
            out.write(f"K {key}\n")
            out.flush()
            n += 1

    async def counter() -> None:
        key = "/crash/counter"
        entry = await store.get(key)
        if entry is None:
            entry = await store.create(key, {"n": 0})
        while True:
            try:
                entry = await store.update(
                    key, {"n": entry.value["n"] + 1}, expected_revision=entry.revision
                )
            except ConflictError:
                fresh = await store.get(key)
                assert fresh is not None
                entry = fresh
                continue
            out.write(f"C {entry.value['n']}\n")
            out.flush()

    await asyncio.gather(*(creator(w) for w in range(8)), counter())


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
