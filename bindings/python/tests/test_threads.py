import threading
import time

import idforge


def test_threads_hammering_one_generator():
    g = idforge.Generator("uuid7")
    per, threads = 20_000, 8
    out = [None] * threads
    start = threading.Barrier(threads)

    def work(i):
        start.wait()
        ids = []
        for k in range(per):
            if k % 100 == 0:
                ids.extend(int(u) for u in g.take_ints(100))
            else:
                ids.append(g.next_int())
        out[i] = ids

    ts = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    all_ids = [v for ids in out for v in ids]
    assert len(set(all_ids)) == len(all_ids)
    for ids in out:
        assert all(a < b for a, b in zip(ids, ids[1:]))


def test_large_batches_release_the_gil():
    """Another thread keeps running while take_bytes makes a large batch: its longest pause
    is shorter than a batch (with the GIL held, it could not run at all meanwhile)."""
    g = idforge.Generator("uuid7")
    stop = threading.Event()
    ticks = []

    def spin():
        now = time.perf_counter
        while not stop.is_set():
            ticks.append(now())

    t = threading.Thread(target=spin)
    t.start()
    time.sleep(0.02)
    t0 = time.perf_counter()
    for _ in range(3):
        g.take_bytes(2_000_000)
    t1 = time.perf_counter()
    stop.set()
    t.join()
    during = [x for x in ticks if t0 <= x <= t1]
    gaps = [b - a for a, b in zip(during, during[1:])]
    assert t1 - t0 > 0.05, "the batches are long enough to tell"
    assert len(during) > 1000
    # With the GIL held for a whole call, the other thread would pause for at least one call
    # (a third of the time). Released, it pauses only while the bytes object is allocated and
    # zeroed (its pages faulted in), which the GIL covers: up to about half a call on a loaded
    # 2-core machine (0.033 s of a 0.061 s call was seen), so the bound is 0.8 of a call.
    per_call = (t1 - t0) / 3
    assert max(gaps) < per_call * 0.8, f"longest pause {max(gaps):.3f}s, a call {per_call:.3f}s"
