"""The Python API under random arguments (hypothesis): every bad input raises an ``Exception``
(an idforge error, or Python's own TypeError/ValueError/OverflowError/MemoryError for an argument
of the wrong type or size), never ``PanicException`` (a ``BaseException`` that ``except
Exception`` misses) and never a crash of the interpreter.

What earlier runs found is kept as explicit examples (``@example``): counts too large for memory
aborted the interpreter, and an int inspected with ``format="hex"`` was read as hex digits.
Longer runs: ``IDFORGE_FUZZ_EXAMPLES=20000 pytest tests/test_fuzz.py``.
"""

import os
import uuid

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import idforge

EXAMPLES = int(os.environ.get("IDFORGE_FUZZ_EXAMPLES", "300"))
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

SCHEMES = idforge.scheme_names() + ["", "snowflak", "UUID7", "custom", "x" * 300]
FORMATS = [None, "dec", "hex", "base32", "uuid", "ulid", "xid", "typeid", "time", "nope", ""]
CLOCKS = ["auto", "precise", "counter", "ticker", "sundial"]
INTS = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**130),
    st.sampled_from([0, 1, 7, 1023, 1024, 2**31, 2**53 + 1, 2**63, 2**64 - 1, 2**64, -1]),
)
ANY = st.one_of(
    st.none(),
    st.booleans(),
    INTS,
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
    st.binary(max_size=40),
    st.lists(st.integers(), max_size=3),
)


def _allowed(e):
    """Exceptions a bad argument may raise: an idforge error, or Python's own for a value of
    the wrong type or size. Anything else (PanicException, SystemError) fails the test."""
    return isinstance(e, (idforge.IdforgeError, TypeError, ValueError, OverflowError, MemoryError))


def _call(f, *args, **kwargs):
    try:
        return f(*args, **kwargs)
    except BaseException as e:  # noqa: BLE001 - the test is what may escape
        assert _allowed(e), f"{type(e).__module__}.{type(e).__name__}: {e}"
        assert str(e), f"{type(e).__name__} without a message"
        # Messages speak of this package's arguments, not of the Rust library's items.
        assert "::" not in str(e), f"a Rust item in a Python message: {e}"
        return None


@SETTINGS
@given(
    scheme=st.one_of(st.sampled_from(SCHEMES), st.text(max_size=20)),
    node=st.one_of(st.none(), INTS),
    shared=st.sampled_from([None, False]),
    clock=st.sampled_from(CLOCKS),
    fmt=st.sampled_from(FORMATS),
    prefix=st.one_of(st.none(), st.text(max_size=70)),
    host_digits=st.one_of(st.none(), st.integers(min_value=-3, max_value=40)),
    at=st.one_of(st.none(), st.sampled_from(["2024-01-01T00:00:00Z", "1969-12-31T23:59:59Z", "9999-12-31T23:59:59Z", "nope"])),
    count=st.one_of(
        st.integers(min_value=-5, max_value=3_000),
        st.integers(min_value=2**40, max_value=2**80),
    ),
)
@example(scheme="uuid7", node=None, shared=False, clock="auto", fmt=None, prefix=None, host_digits=None, at=None, count=10**10)
@example(scheme="snowflake", node=7, shared=False, clock="auto", fmt=None, prefix=None, host_digits=None, at=None, count=2**61)
def test_generators_with_random_arguments_raise_exceptions_only(
    scheme, node, shared, clock, fmt, prefix, host_digits, at, count
):
    g = _call(
        idforge.Generator,
        scheme,
        node,
        shared=shared,
        clock=clock,
        format=fmt,
        prefix=prefix,
        host_digits=host_digits,
        at=at,
    )
    if g is None:
        return
    first = _call(g.next)
    if first is not None:
        second = _call(g.next)
        assert second is None or str(second) != str(first)
    # Counts: small ones are made; negative ones and ones too large for memory are refused.
    for name in ("take", "take_ints", "take_bytes"):
        out = _call(getattr(g, name), count)
        if out is not None:
            assert 0 <= count < 2**40
            assert len(out) == (count * g.width if name == "take_bytes" else count)


@SETTINGS
@given(
    value=st.one_of(
        st.text(max_size=60),
        INTS,
        st.binary(max_size=40),
        st.builds(uuid.UUID, int=st.integers(min_value=0, max_value=2**128 - 1)),
        ANY,
    ),
    scheme=st.one_of(st.none(), st.sampled_from(SCHEMES)),
    fmt=st.sampled_from(FORMATS),
    host_digits=st.one_of(st.none(), st.integers(min_value=-3, max_value=40)),
)
@example(value=123456, scheme="snowflake", fmt="hex", host_digits=None)
@example(value=b"\x01\x02", scheme="snowflake", fmt="hex", host_digits=None)
def test_inspect_with_random_input_raises_exceptions_only(value, scheme, fmt, host_digits):
    d = _call(idforge.inspect, value, scheme, format=fmt, host_digits=host_digits)
    if d is not None and isinstance(value, int) and not isinstance(value, bool) and scheme:
        # An int is a value: what comes back is that value, never its digits in another base.
        assert d.value == value


@SETTINGS
@given(prefix=st.one_of(st.text(max_size=80), ANY))
def test_module_functions_with_random_arguments_raise_exceptions_only(prefix):
    _call(idforge.typeid, prefix)
    for f in (idforge.uuid7, idforge.uuid4, idforge.ulid, idforge.nanots, idforge.uprotocol):
        assert _call(f) is not None


@SETTINGS
@given(
    on_exhausted=st.one_of(st.none(), st.sampled_from(["wait", "run-ahead", "nope"]), ANY),
    max_lead=st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True), INTS),
    on_clock_behind=st.one_of(st.none(), st.sampled_from(["fail", "wait", "nope"])),
)
def test_policies_with_random_arguments_raise_exceptions_only(on_exhausted, max_lead, on_clock_behind):
    p = _call(idforge.Policy, on_exhausted=on_exhausted, max_lead=max_lead, on_clock_behind=on_clock_behind)
    if p is not None:
        g = _call(idforge.Generator, "snowflake", 3, shared=False, policy=p)
        if g is not None:
            _call(g.next)
