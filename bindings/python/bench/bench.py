"""idforge against the Python id packages, side by side in one run (scripts/python-test --bench).

Each row times one call (best of 7 repeats of a loop) and gives the ratio to the baseline
measured in the same run: the peer that returns the same kind of value. Prints a Markdown table.
"""

import platform
from importlib.metadata import version
import sys
import timeit
import uuid

import idforge

try:
    import ulid as python_ulid
    import uuid6
    import uuid_utils
    import uuid_utils.compat
except ImportError as e:  # pragma: no cover
    sys.exit(f"bench.py needs uuid-utils, python-ulid and uuid6 ({e}); run scripts/python-test --bench")

REPEAT = 7


def per_call(fn, number=200_000):
    """Nanoseconds per call of fn, the best of REPEAT loops of `number` calls."""
    fn()
    return min(timeit.repeat(fn, number=number, repeat=REPEAT)) / number * 1e9


def main():
    rows = []

    def pair(what, ours_name, ours, base_name, base, target=None, number=200_000):
        o, b = per_call(ours, number), per_call(base, number)
        rows.append((what, ours_name, o, base_name, b, o / b, target))

    pair("UUIDv7, own type", "idforge.native.uuid7()", idforge.native.uuid7,
         "uuid_utils.uuid7()", uuid_utils.uuid7, 0.8)
    pair("UUIDv7, uuid.UUID", "idforge.uuid7()", idforge.uuid7,
         "uuid_utils.compat.uuid7()", uuid_utils.compat.uuid7, 0.8)
    pair("UUIDv7, uuid.UUID", "idforge.uuid7()", idforge.uuid7,
         "uuid6.uuid7()", uuid6.uuid7)
    pair("UUIDv4, uuid.UUID", "idforge.uuid4()", idforge.uuid4,
         "uuid.uuid4()", uuid.uuid4)
    pair("UUIDv4, uuid.UUID", "idforge.uuid4()", idforge.uuid4,
         "uuid_utils.compat.uuid4()", uuid_utils.compat.uuid4)
    pair("ULID", "idforge.ulid() (str)", idforge.ulid,
         "ulid.ULID()", python_ulid.ULID, 0.5)
    pair("ULID as text", "idforge.ulid() (str)", idforge.ulid,
         "str(ulid.ULID())", lambda: str(python_ulid.ULID()), 0.5)

    g = idforge.Generator("uuid7")
    n = 1_000_000
    batch = min(timeit.repeat(lambda: g.take_bytes(n), number=1, repeat=REPEAT)) / n * 1e9
    loop = min(timeit.repeat(lambda: [uuid_utils.uuid7().bytes for _ in range(n)], number=1, repeat=3)) / n * 1e9
    rows.append(("1,000,000 UUIDv7 as bytes", "Generator('uuid7').take_bytes(1_000_000)", batch,
                 "[uuid_utils.uuid7().bytes for _ in range(1_000_000)]", loop, batch / loop, None))

    print(f"Python {platform.python_version()} ({platform.python_implementation()}), "
          f"idforge {idforge.__version__}, uuid-utils {version('uuid-utils')}, python-ulid {version('python-ulid')}, uuid6 {version('uuid6')}; "
          f"{platform.machine()}, best of {REPEAT}\n")
    print("| what | idforge | ns | baseline | ns | ratio | target |")
    print("| --- | --- | ---: | --- | ---: | ---: | --- |")
    for what, on, o, bn, b, r, t in rows:
        tgt = "" if t is None else (f"<= {t}x " + ("met" if r <= t else "MISSED"))
        print(f"| {what} | `{on}` | {o:.0f} | `{bn}` | {b:.0f} | {r:.2f}x | {tgt} |")
    print(f"\nbatch: {batch:.1f} ns per id (target < 30: {'met' if batch < 30 else 'MISSED'})")


if __name__ == "__main__":
    main()
