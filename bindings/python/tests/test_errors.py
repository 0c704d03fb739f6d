import os

import pytest

import idforge
from idforge import errors


def test_hierarchy():
    assert issubclass(errors.NodeError, errors.ConfigError)
    assert issubclass(errors.ConfigError, ValueError)
    assert issubclass(errors.ClockBehindError, errors.ClockError)
    assert issubclass(errors.StateFileRefusedError, OSError)
    for name in errors.__all__:
        assert issubclass(getattr(errors, name), errors.IdforgeError)


def test_unknown_scheme_names_the_closest():
    with pytest.raises(idforge.UnknownSchemeError) as e:
        idforge.Generator("snowflak")
    assert "did you mean snowflake?" in str(e.value) and e.value.kind == "UnknownScheme"


def test_node_out_of_range():
    with pytest.raises(idforge.NodeError) as e:
        idforge.Generator("snowflake", node=1024)
    assert e.value.kind == "NodeOutOfRange" and "from 0 to 1023" in str(e.value)
    with pytest.raises(idforge.NodeError) as e:
        idforge.Generator("nanots-host")
    assert e.value.kind == "HostRequired"


def test_setting_not_applicable():
    with pytest.raises(idforge.ConfigError) as e:
        idforge.Generator("locality", node=1)
    assert e.value.kind == "NotApplicable" and "locality does not take a node id" in str(e.value)
    with pytest.raises(idforge.ConfigError):
        idforge.Generator("uuid4", shared=True)
    with pytest.raises(ValueError):
        idforge.Generator("uuid7", clock="sundial")
    # Durable mode and a file mode need a state file: not with shared=False.
    with pytest.raises(ValueError):
        idforge.Generator("uuid7", durable=True, shared=False)
    with pytest.raises(ValueError):
        idforge.Generator("uuid7", state_mode=0o600, shared=False)


def test_foreign_state_file_is_refused(state_dir):
    p = state_dir / "foreign.state"
    p.write_bytes(b"not a state file" * 512)
    os.chmod(p, 0o600)
    with pytest.raises(idforge.StateFileRefusedError) as e:
        idforge.Generator("uuid7", state=p)
    assert e.value.kind == "StateFile.Foreign" and "refusing to overwrite it" in str(e.value)
    assert p.read_bytes() == b"not a state file" * 512
    # The way out in this package's terms, not the Rust library's (`StateOptions::path`).
    assert "(state=PATH)" in str(e.value) and "::" not in str(e.value)


def test_messages_name_python_arguments_not_rust_items(state_dir):
    p = state_dir / "one.state"
    idforge.Generator("uuid7", state=p).next()
    with pytest.raises(idforge.StateFileRefusedError) as e:
        idforge.Generator("uuid7", state=p, policy=idforge.Policy(on_exhausted="run-ahead"), shared=True)
    msg = str(e.value)
    assert "(idforge.Policy: on_exhausted, max_lead, on_clock_behind)" in msg and "(state=PATH)" in msg
    assert "::" not in msg and "`Policy`" not in msg
    open_dir = state_dir / "open"
    open_dir.mkdir()
    os.chmod(open_dir, 0o777)
    with pytest.raises(idforge.StateFileError) as e:
        idforge.Generator("uuid7", state=open_dir / "x.state")
    assert "::" not in str(e.value) and "(state_mode=0o666 here: every user can write it)" in str(e.value), str(e.value)


def test_state_file_of_another_scheme_is_refused(state_dir):
    p = state_dir / "one.state"
    idforge.Generator("uuid7", state=p).next()
    with pytest.raises(idforge.StateFileRefusedError) as e:
        idforge.Generator("ulid", state=p)
    assert e.value.kind == "StateFile.Mismatch"


def test_time_out_of_range_is_a_clock_error():
    # Snowflake's 41-bit millisecond field runs out in 2080.
    g = idforge.Generator("snowflake", node=1, at="2100-01-01T00:00:00Z")
    with pytest.raises(idforge.ClockError) as e:
        g.next()
    assert e.value.kind == "TimeOutOfRange" and "ran out in the year 2080" in str(e.value)


def test_a_policy_with_a_fixed_clock_is_refused():
    with pytest.raises(idforge.ConfigError) as e:
        idforge.Generator("uuid7", at="2100-01-01T00:00:00Z", policy=idforge.Policy(max_lead=1.0))
    assert e.value.kind == "NotApplicable"


@pytest.mark.parametrize(
    "call,n",
    [("take", 10**10), ("take_ints", 2**40), ("take", 2**61), ("take_bytes", 10**12), ("take_bytes", 2**63)],
)
def test_a_batch_too_large_for_memory_is_a_memory_error_not_an_abort(call, n):
    # Before: take(10**10) and take_ints(2**40) aborted the interpreter (SIGABRT), take(2**61)
    # raised PanicException, a BaseException that `except Exception` misses.
    g = idforge.Generator("uuid7", shared=False)
    with pytest.raises(MemoryError, match="take fewer at a time"):
        getattr(g, call)(n)
    assert g.next_int() > 0  # the generator is still fine
    with pytest.raises(OverflowError):
        g.take(2**64)  # not a u64 at all: Python's own error for the argument
    with pytest.raises(OverflowError):
        g.take(-1)


def test_inspect_never_reads_an_int_or_bytes_as_another_base():
    # Before: the decimal digits of 123456 were read as hex (1193046), b"\x01\x02" gave 600.
    for value in (123456, b"\x01\x02"):
        with pytest.raises(idforge.ParseError, match="is a value, not text"):
            idforge.inspect(value, "snowflake", format="hex")
    assert idforge.inspect(123456, "snowflake").value == 123456
    assert idforge.inspect(b"\x01\x02", "snowflake").value == 258
    assert idforge.inspect(123456, "snowflake", format="dec").value == 123456


def test_state_mode_is_permission_bits_only(state_dir):
    for mode in (0o4600, 0o2660, 0o1000000):
        with pytest.raises(ValueError, match="not permission bits"):
            idforge.Generator("uuid7", shared=True, state_mode=mode)
    g = idforge.Generator("uuid7", shared=True, state_mode=0o600)
    assert g.state_path is not None


def test_a_fixed_clock_takes_rfc3339_text_or_an_aware_datetime_only():
    import datetime as dt

    when = dt.datetime(2024, 5, 1, 12, 0, 0, 123000, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    a = idforge.Generator("snowflake", node=7, at=when).next()
    b = idforge.Generator("snowflake", node=7, at="2024-05-01T10:00:00.123Z").next()
    assert a == b
    assert idforge.inspect(a, "snowflake").time == when
    with pytest.raises(ValueError, match="naive datetime"):
        idforge.Generator("snowflake", node=7, at=dt.datetime(2024, 5, 1))
    with pytest.raises(TypeError, match="RFC 3339 text or an aware datetime"):
        idforge.Generator("snowflake", node=7, at=1714557600)
    with pytest.raises(idforge.ParseError):
        idforge.Generator("snowflake", node=7, at="yesterday")


def test_a_relative_state_path_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="relative path"):
        idforge.Generator("snowflake", node=7, state="ids.state")
    assert not (tmp_path / "ids.state").exists()


def test_format_refuses_a_value_wider_than_the_scheme():
    g = idforge.Generator("snowflake", node=7, shared=False)
    assert g.format(5) == "5"
    for v in (2**64 + 5, 2**100):
        with pytest.raises(ValueError, match="does not fit in the 64 bits"):
            g.format(v)
    with pytest.raises(ValueError, match="does not fit"):
        idforge.Generator("tsid", node=1, shared=False).format(2**70)


def test_a_fixed_clock_applies_an_offset_to_the_microsecond_and_ignores_isoformat_overrides():
    import datetime as dt

    off = dt.timezone(dt.timedelta(hours=5, minutes=30, seconds=15, microseconds=7))
    when = dt.datetime(2024, 5, 1, 12, 0, 0, 0, tzinfo=off)
    g = idforge.Generator("nanots", at=when)
    expected = int((when - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)) / dt.timedelta(microseconds=1)) * 1000
    # nanots keeps the time to its tick (32 ns); the lost microseconds were 7,000 ns.
    assert 0 <= expected - g.next() < 64

    class Lying(dt.datetime):
        def isoformat(self, *a, **k):
            return "2030-01-01T00:00:00+00:00"

    lie = Lying(2024, 5, 1, tzinfo=dt.timezone.utc)
    d = idforge.inspect(idforge.Generator("snowflake", node=7, at=lie).next(), "snowflake")
    assert d.time == dt.datetime(2024, 5, 1, tzinfo=dt.timezone.utc)


def test_a_bool_is_no_node_and_a_fixed_clock_takes_no_clock():
    with pytest.raises(TypeError, match="not a bool"):
        idforge.Generator("snowflake", node=True)
    with pytest.raises(TypeError):
        idforge.Generator("snowflake", node="7")
    with pytest.raises(OverflowError):
        idforge.Generator("snowflake", node=-1)
    with pytest.raises(ValueError, match="would be ignored"):
        idforge.Generator("snowflake", node=7, at="2024-01-01T00:00:00Z", clock="ticker")
    assert idforge.Generator("snowflake", node=7, at="2024-01-01T00:00:00Z", clock="auto").next() > 0
