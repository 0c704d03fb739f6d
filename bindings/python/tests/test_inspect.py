import datetime as dt
import uuid

import pytest

import idforge

UTC = dt.timezone.utc


def test_rfc9562_uuid7_vector():
    # RFC 9562, Appendix A.6.
    d = idforge.inspect("017F22E2-79B0-7CC3-98C4-DC0C0C07398F")
    assert d.scheme == "uuid-v7" and d.version == 7
    assert d.time == dt.datetime(2022, 2, 22, 19, 22, 22, tzinfo=UTC)
    assert d.unix_ms == 1_645_557_742_000
    assert d.time_text == "2022-02-22T19:22:22.000Z"
    assert d.layouts == ("uuid7", "uprotocol") and "scheme `uprotocol`" in d.hint
    assert d.parts["rand_a"] == "cc3"
    same = idforge.inspect(uuid.UUID("017F22E2-79B0-7CC3-98C4-DC0C0C07398F"))
    assert same.value == d.value
    assert idforge.inspect(d.value).value == d.value


def test_snowflake_vector_as_int_and_text():
    d = idforge.inspect(1541815603606036480, "snowflake")
    assert d.node == 378 and d.parts["node"] == 378
    assert d == idforge.inspect("1541815603606036480", "snowflake")


def test_generated_id_time_is_now():
    before = dt.datetime.now(UTC)
    d = idforge.inspect(idforge.uuid7(), "uuid7")
    after = dt.datetime.now(UTC)
    assert before - dt.timedelta(milliseconds=2) <= d.time <= after + dt.timedelta(milliseconds=2)
    assert d.counter is not None


def test_errors():
    with pytest.raises(idforge.ParseError) as e:
        idforge.inspect("not an id")
    assert isinstance(e.value, ValueError) and e.value.kind == "MalformedId"
    with pytest.raises(idforge.ParseError) as e:
        idforge.inspect("017F22E2-79B0-4CC3-98C4-DC0C0C07398F", "uuid7")
    assert e.value.kind == "WrongVersion"
    with pytest.raises(idforge.ParseError) as e:
        idforge.inspect("1999999999800000", "snowflake")
    assert e.value.kind == "AmbiguousId" and "hex" in str(e.value)
    with pytest.raises(TypeError):
        idforge.inspect(1.5)
