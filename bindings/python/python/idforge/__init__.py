"""idforge: unique ids from idforge's Rust engine, in-process.

UUIDv7, ULID, TypeID, Snowflake, Sonyflake, TSID, ObjectId, XID, nanots, Locality UUID and
custom bit layouts, from one lock-free sequencer. Every process of the host that opens the same
scheme and node, Python or Rust or ``idforge gen --shared``, draws from one sequence (a
memory-mapped state file, the default): forked children, gunicorn, uWSGI and Celery workers and
``multiprocessing`` workers never repeat each other's ids, whenever they first make one.
``shared=False`` (or ``IDFORGE_SHARED=0``) keeps a generator's sequence in its process.

>>> import idforge
>>> u = idforge.uuid7()                 # a uuid.UUID
>>> u.version
7
>>> g = idforge.Generator("snowflake", node=7)
>>> a, b = g.next(), g.next()           # ints
>>> a < b
True
>>> d = idforge.inspect(str(u))
>>> d.scheme, d.version
('uuid-v7', 7)
"""

from __future__ import annotations

import datetime as _dt
import uuid as _uuid
from dataclasses import dataclass as _dataclass
from typing import Any, Dict, Optional, Tuple, Union

from . import errors, native
from ._idforge import (
    UUID,
    Generator,
    Policy,
    __version__,
    fork_generation,
    locality,
    nanots,
    scheme_names,
    typeid,
    ulid,
    uprotocol,
    uprotocol_v8,
    uuid4,
    uuid7,
)
from ._idforge import inspect_dict as _inspect_dict
from .errors import (
    ClockBehindError,
    ClockError,
    ConfigError,
    IdforgeError,
    LeaseLostError,
    NodeError,
    ParseError,
    StateFileError,
    StateFileLostError,
    StateFileRefusedError,
    UnknownSchemeError,
)

__all__ = [
    "UUID",
    "Generator",
    "Policy",
    "Decoded",
    "inspect",
    "uuid7",
    "uuid4",
    "ulid",
    "typeid",
    "uprotocol",
    "uprotocol_v8",
    "nanots",
    "locality",
    "scheme_names",
    "fork_generation",
    "native",
    "errors",
    "IdforgeError",
    "ConfigError",
    "UnknownSchemeError",
    "NodeError",
    "ParseError",
    "ClockError",
    "ClockBehindError",
    "StateFileError",
    "StateFileRefusedError",
    "StateFileLostError",
    "LeaseLostError",
    "__version__",
]

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


@_dataclass(frozen=True)
class Decoded:
    """An id taken apart by :func:`inspect` (the library's ``idforge::Decoded``).

    ``time`` is the id's time as an aware UTC ``datetime`` (microsecond precision: ``unix_ns``
    keeps every digit; ``time_text`` is the library's RFC 3339 text at the scheme's precision);
    fields a scheme does not have are ``None``. ``parts`` holds the scheme's own parts by the
    names ``idforge inspect`` prints.
    """

    input: str
    scheme: str
    value: int
    bits: int
    unix_ns: Optional[int]
    time: Optional[_dt.datetime]
    time_text: Optional[str]
    node: Optional[int]
    counter: Optional[int]
    random: Optional[int]
    version: Optional[int]
    variant: Optional[int]
    canonical: str
    pid: Optional[int]
    mac: Optional[str]
    prefix: Optional[str]
    layouts: Tuple[str, ...]
    note: Optional[str]
    hint: Optional[str]
    parts: Dict[str, Union[int, str]]

    @property
    def unix_ms(self) -> Optional[int]:
        """The time in whole milliseconds since 1970, where the id records one."""
        return None if self.unix_ns is None else self.unix_ns // 1_000_000


def _as_value(kind: str, format: Optional[str]) -> None:
    # An int or bytes is a value, written here in decimal: a format saying how text is written
    # would read those digits as another base (123456 as hex is 1193046), a made-up answer.
    if format is not None and format != "dec":
        raise ParseError(
            f"format={format!r} says how id text is written; {kind} is a value, not text: "
            f"pass the id's text instead, or leave format out"
        )


def _as_text(id: Any, scheme: Optional[str], format: Optional[str]) -> Tuple[str, Optional[str]]:
    if isinstance(id, str):
        return id, format
    if isinstance(id, (_uuid.UUID, UUID)):
        return str(id), format
    if isinstance(id, (bytes, bytearray, memoryview)):
        raw = bytes(id)
        if len(raw) == 16 and scheme is None:
            return str(_uuid.UUID(bytes=raw)), format
        _as_value("bytes", format)
        return str(int.from_bytes(raw, "big")), "dec"
    if isinstance(id, int) and not isinstance(id, bool):
        if scheme is None:
            if 0 <= id < 1 << 128:
                return str(_uuid.UUID(int=id)), format
            raise ParseError(f"{id} is not a 128-bit value: integers are decoded as UUIDs unless a scheme is named")
        _as_value("an int", format)
        return str(id), "dec"
    raise TypeError(f"inspect() takes id text, an int, bytes or a UUID, not {type(id).__name__}")


def inspect(
    id: Union[str, int, bytes, _uuid.UUID, UUID],
    scheme: Optional[str] = None,
    *,
    format: Optional[str] = None,
    layout: Optional[str] = None,
    host_digits: Optional[int] = None,
) -> Decoded:
    """Decodes an id: its time, node, counter, random bits, version...

    ``id`` is text (any format of the scheme), an int (decimal for a named scheme; without one,
    a UUID's 128-bit value), raw bytes, or a UUID. Without ``scheme`` only UUIDs and TypeID
    text are recognised; ``format`` names the text's format when it could be read two ways.
    Raises :class:`ParseError` for text that is not an id of the scheme.

    >>> d = idforge.inspect("017F22E2-79B0-7CC3-98C4-DC0C0C07398F")
    >>> d.time.isoformat(), d.version
    ('2022-02-22T19:22:22+00:00', 7)
    >>> idforge.inspect(1541815603606036480, "snowflake").node
    378
    """
    text, format = _as_text(id, scheme, format)
    raw = _inspect_dict(text, scheme, format, layout, host_digits)
    ns = raw["unix_ns"]
    when = None
    if ns is not None:
        try:
            when = _EPOCH + _dt.timedelta(microseconds=ns // 1000)
        except OverflowError:
            when = None  # beyond datetime's year 9999: unix_ns and time_text still hold it
    raw["time"] = when
    raw["layouts"] = tuple(raw["layouts"])
    return Decoded(**raw)
