import uuid

import pytest

import idforge


def test_uuid7_is_a_stdlib_uuid_of_version_7_and_increases():
    a, b = idforge.uuid7(), idforge.uuid7()
    assert type(a) is uuid.UUID
    assert a.version == 7 and a.variant == uuid.RFC_4122
    assert a.is_safe == uuid.SafeUUID.unknown
    assert uuid.UUID(str(a)) == a and hash(uuid.UUID(str(a))) == hash(a)
    assert b > a


def test_snowflake_needs_a_node():
    with pytest.raises(idforge.NodeError) as e:
        idforge.Generator("snowflake")
    assert e.value.kind == "NodeRequired"
    assert "needs a node id from 0 to 1023" in str(e.value)
