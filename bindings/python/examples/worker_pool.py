"""ids made in a multiprocessing pool, of any start method, never repeat: each worker makes its
own generator when it starts (the way a Celery or RQ worker does) and all of them draw from one
host-wide sequence.

    python examples/worker_pool.py [fork|spawn|forkserver]
"""

import multiprocessing
import os
import sys
from typing import List, Optional, Tuple

import idforge

_gen: Optional[idforge.Generator] = None


def _start_worker() -> None:
    global _gen
    _gen = idforge.Generator("snowflake", node=7)


def make_ids(n: int) -> Tuple[int, List[int]]:
    assert _gen is not None, "the pool's initializer makes the generator"
    return os.getpid(), _gen.take_ints(n)


def main(method: str) -> int:
    ctx = multiprocessing.get_context(method)
    with ctx.Pool(4, initializer=_start_worker) as pool:
        results = pool.map(make_ids, [10_000] * 8, chunksize=1)
    every = [i for _, batch in results for i in batch]
    workers = {pid for pid, _ in results}
    repeated = len(every) - len(set(every))
    print(f"{method}: {len(every)} ids from {len(workers)} workers, {repeated} repeated")
    return 1 if repeated else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "spawn"))
