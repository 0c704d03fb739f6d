"""The package README's first example as a program: ids of the common schemes, a Snowflake
generator shared by every process of the host, and an id taken apart.

    python examples/quickstart.py
"""

import uuid

import idforge


def main() -> None:
    u: uuid.UUID = idforge.uuid7()  # a standard uuid.UUID, version 7, monotonic
    print("uuid7  ", u)
    print("ulid   ", idforge.ulid())
    print("typeid ", idforge.typeid("user"))
    print("nanots ", idforge.nanots())

    g = idforge.Generator("snowflake", node=7)  # host-wide: every process draws from one sequence
    first = g.next_int()
    batch = g.take_ints(1000)
    assert all(a < b for a, b in zip([first] + batch, batch)), "ids increase"
    print("snowflake", first, "then 1000 more, up to", batch[-1])
    print("state file", g.state_path)

    blob = g.take_bytes(100_000)  # each id big-endian in g.width bytes, the GIL released
    print("take_bytes", len(blob), "bytes =", len(blob) // g.width, "ids")

    d = idforge.inspect(u)
    print("inspect", d.scheme, d.time.isoformat() if d.time else None, "counter", d.counter)
    node = idforge.inspect(1541815603606036480, "snowflake").node
    print("snowflake 1541815603606036480 was made by node", node)


if __name__ == "__main__":
    main()
