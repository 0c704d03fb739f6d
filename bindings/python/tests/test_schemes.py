"""Every scheme's ids parse back with the library's decoder (idforge.inspect) and, for UUIDs,
with the standard library's uuid module."""

import uuid

import pytest

import idforge

CUSTOM = "time:41,node:10,counter:12,tick=1ms,epoch=2020-01-01T00:00:00Z"
# Schemes whose ids are not ordered by time (random, or a counter above the time by design).
UNORDERED = {"uuid4", "locality"}
# Schemes written as text by default.
TEXT = {"ulid", "tsid", "objectid", "xid", "typeid", "ksuid"}


def open_scheme(name):
    if name == "custom":
        return idforge.Generator(name, node=3, layout=CUSTOM)
    if name == "nanots-host":
        return idforge.Generator(name, node=42)
    try:
        return idforge.Generator(name)
    except idforge.NodeError:
        return idforge.Generator(name, node=5)


def test_every_scheme_is_listed():
    names = idforge.scheme_names()
    assert "uuid7" in names and "ulid" in names and "custom" in names
    assert len(names) == len(set(names)) >= 17


@pytest.mark.parametrize("name", idforge.scheme_names())
def test_ids_parse_back(name):
    g = open_scheme(name)
    ints = g.take_ints(200)
    if name not in UNORDERED:
        assert all(a < b for a, b in zip(ints, ints[1:])), "ids increase in issue order"
    assert len(set(ints)) == len(ints)
    for v in ints[:50]:
        text = g.format(v)
        d = idforge.inspect(text, name, layout=CUSTOM if name == "custom" else None)
        # A KSUID is 160 bits: the generator's 128-bit value, then 32 random bits added as
        # its text is written.
        assert d.value >> (d.bits - 128) == v if d.bits > 128 else d.value == v, (name, text)
        assert d.scheme == name
        if g.is_uuid:
            u = uuid.UUID(str(uuid.UUID(int=v)))
            assert u.int == v
            if name == "locality":
                # Groupon's Locality UUID: version b and variant bits of its own.
                assert d.version == 0xB and ((v >> 76) & 0xF) == 0xB
            else:
                assert u.variant == uuid.RFC_4122 and u.version == d.version
    # next() returns the scheme's natural type
    x = g.next()
    expected = {"uuid": uuid.UUID, "int": int, "str": str}[g.returns]
    assert type(x) is expected
    assert g.returns == ("uuid" if g.is_uuid else "str" if name in TEXT else "int")


@pytest.mark.parametrize(
    "fn,scheme",
    [
        (idforge.uuid7, "uuid7"),
        (idforge.uuid4, "uuid4"),
        (idforge.uprotocol, "uprotocol"),
        (idforge.uprotocol_v8, "uprotocol-v8"),
        (idforge.locality, "locality"),
        (idforge.ulid, "ulid"),
        (idforge.nanots, "nanots"),
        (idforge.typeid, "typeid"),
    ],
)
def test_module_functions_parse_back(fn, scheme):
    a, b = fn(), fn()
    assert a != b
    d = idforge.inspect(a if not isinstance(a, uuid.UUID) else str(a), scheme)
    assert d.scheme == scheme
    if isinstance(a, uuid.UUID):
        assert d.value == a.int and uuid.UUID(str(a)) == a
        assert d.version == (a.version if scheme != "locality" else 0xB)


def test_typeid_prefix_and_text_formats():
    t = idforge.typeid("user")
    assert t.startswith("user_") and len(t) == 5 + 26
    assert idforge.inspect(t).prefix == "user"
    g = idforge.Generator("uuid7", format="base32")
    s = g.next()
    assert isinstance(s, str) and len(s) == 26
    assert idforge.inspect(s, "uuid7", format="base32").version == 7
    assert idforge.Generator("uuid7", format="typeid", prefix="order").next().startswith("order_")


def test_native_uuid_type_behaves_like_uuid_uuid():
    import pickle

    n = idforge.native.uuid7()
    s = n.to_uuid()
    assert type(n) is idforge.UUID and type(s) is uuid.UUID
    assert n == s and s == n and hash(n) == hash(s)
    assert {s: 1}[n] == 1
    assert str(n) == str(s) and n.hex == s.hex and n.bytes == s.bytes and int(n) == s.int
    assert n.version == 7 and n.urn == s.urn
    assert repr(n) == f"UUID('{s}')"
    later = idforge.native.uuid7()
    assert n < later and later > s and s < later
    assert pickle.loads(pickle.dumps(n)) == n
    assert idforge.UUID(str(s)) == n == idforge.UUID(s.int) == idforge.UUID(s.bytes) == idforge.UUID(s)
    assert n != "not a uuid"
    big = uuid.UUID(int=(1 << 128) - 1)
    assert hash(idforge.UUID(big)) == hash(big)


def test_iteration_and_take():
    g = idforge.Generator("snowflake", node=9)
    it = iter(g)
    a, b = next(it), next(it)
    assert isinstance(a, int) and a < b
    ids = g.take(5000)
    assert len(ids) == 5000 and ids == sorted(ids) and b < ids[0]
    blob = g.take_bytes(5000)
    assert g.width == 8 and len(blob) == 8 * 5000
    first = int.from_bytes(blob[:8], "big")
    assert first > ids[-1]
    assert idforge.inspect(first, "snowflake").node == 9
    u = idforge.Generator("uuid7")
    blob = u.take_bytes(10)
    assert len(blob) == 160 and uuid.UUID(bytes=blob[:16]).version == 7
    assert idforge.Generator("objectid", node=1).width == 12
