"""Forked children never repeat ids: 8 processes forked (multiprocessing, fork start method)
from a parent that already generated ids, 100,000 ids each; and host-wide (shared=True) ids in
one order across processes."""

import multiprocessing as mp
import os
import time

import idforge

PROCS = 8
EACH = 100_000

# Inherited by the forked children (created in the parent, used before the fork).
INHERITED = {}


def _child_next(i):
    g = INHERITED["g"]
    if i % 2:
        ids = [g.next_int() for _ in range(EACH)]
    else:
        # Half the children take batches (reserved ranges of stamps) instead.
        blob = b"".join(g.take_bytes(1000) for _ in range(EACH // 1000))
        ids = [int.from_bytes(blob[k : k + 16], "big") for k in range(0, len(blob), 16)]
    assert idforge.fork_generation() >= 1
    return os.getpid(), ids


def _child_module(_):
    return os.getpid(), [idforge.uuid7().int for _ in range(EACH)]


def _check(parent_ids, results):
    # Each task ran in a process of its own (maxtasksperchild=1: a worker exits after one task;
    # a pool of PROCS workers may otherwise run several tasks in one worker).
    pids = {pid for pid, _ in results}
    assert len(pids) == PROCS and os.getpid() not in pids
    seen = set(parent_ids)
    total = len(parent_ids)
    for _, ids in results:
        assert len(ids) == EACH
        assert all(a < b for a, b in zip(ids, ids[1:])), "each process strictly increasing"
        seen.update(ids)
        total += len(ids)
    assert len(seen) == total, f"{total - len(seen)} duplicate ids"


def test_forked_children_never_repeat_a_generator_s_ids():
    g = idforge.Generator("uuid7")
    INHERITED["g"] = g
    parent = g.take_ints(5000) + [int.from_bytes(g.take_bytes(4096)[-16:], "big")]
    with mp.get_context("fork").Pool(PROCS, maxtasksperchild=1) as pool:
        results = pool.map(_child_next, range(PROCS), chunksize=1)
    parent += g.take_ints(1000)
    _check(parent, results)


def test_forked_children_never_repeat_module_uuid7():
    parent = [idforge.uuid7().int for _ in range(5000)]
    with mp.get_context("fork").Pool(PROCS, maxtasksperchild=1) as pool:
        results = pool.map(_child_module, range(PROCS), chunksize=1)
    _check(parent, results)


def test_os_fork_child_continues_the_parent_s_sequence():
    g = idforge.Generator("snowflake", node=4)
    before = g.take_ints(10_000)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        try:
            os.close(r)
            ids = g.take_ints(10_000)
            os.write(w, b"".join(i.to_bytes(8, "big") for i in ids))
        finally:
            os._exit(0)
    os.close(w)
    mine = g.take_ints(10_000)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    os.waitpid(pid, 0)
    child = [int.from_bytes(data[k : k + 8], "big") for k in range(0, len(data), 8)]
    assert len(child) == 10_000
    assert min(child) > max(before) and min(mine) > max(before)
    assert not set(child) & set(mine)


def _child_shared(args):
    path, n = args
    # A worker of its own: opens the state file after the fork, as a separately started
    # process would.
    g = idforge.Generator("uuid7", state=path)
    now = time.monotonic_ns
    out = []
    for _ in range(n):
        t0 = now()
        v = g.next_int()
        out.append((t0, now(), v))
    return out


def test_shared_ids_are_ordered_across_processes(state_dir):
    path = str(state_dir / "uuid7.state")
    g = idforge.Generator("uuid7", shared=True, state=path)
    now = time.monotonic_ns
    events = []
    for _ in range(1000):
        t0 = now()
        v = g.next_int()
        events.append((t0, now(), v))
    with mp.get_context("fork").Pool(PROCS, maxtasksperchild=1) as pool:
        for out in pool.map(_child_shared, [(path, EACH)] * PROCS, chunksize=1):
            assert all(a[2] < b[2] for a, b in zip(out, out[1:]))
            events.extend(out)
    assert len({v for _, _, v in events}) == len(events) == 1000 + PROCS * EACH
    # Every id is above every id whose call returned before its call started.
    by_start = sorted(events)
    by_end = sorted(events, key=lambda e: e[1])
    j, done_max, checked = 0, -1, 0
    for t0, _, v in by_start:
        while j < len(by_end) and by_end[j][1] < t0:
            done_max = max(done_max, by_end[j][2])
            j += 1
        assert v > done_max
        checked += done_max >= 0
    assert checked > len(events) // 2
