"""Type stubs of the extension module (re-exported by ``idforge``)."""

import builtins
import datetime
import os
import pathlib
import uuid
from typing import Any, Dict, Iterator, List, Optional, Union, final

from typing_extensions import Self, TypeAlias

__all__ = [
    "Generator",
    "Policy",
    "UUID",
    "uuid7",
    "uuid7_native",
    "uuid4",
    "uuid4_native",
    "ulid",
    "uprotocol",
    "uprotocol_v8",
    "nanots",
    "locality",
    "typeid",
    "inspect_dict",
    "scheme_names",
    "fork_generation",
    "__version__",
]

__version__: str

@final
class UUID:
    """idforge's own immutable UUID: equal to, hashing and ordering like the ``uuid.UUID`` of
    the same value; ``to_uuid()`` converts."""

    def __new__(cls, value: Union[str, builtins.int, builtins.bytes, uuid.UUID, "UUID"]) -> Self: ...
    @property
    def int(self) -> builtins.int: ...
    @property
    def bytes(self) -> builtins.bytes: ...
    @property
    def hex(self) -> str: ...
    @property
    def urn(self) -> str: ...
    @property
    def version(self) -> Optional[builtins.int]: ...
    def to_uuid(self) -> uuid.UUID: ...
    def __int__(self) -> builtins.int: ...
    def __hash__(self) -> builtins.int: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __lt__(self, value: Union[uuid.UUID, "UUID"], /) -> bool: ...
    def __le__(self, value: Union[uuid.UUID, "UUID"], /) -> bool: ...
    def __gt__(self, value: Union[uuid.UUID, "UUID"], /) -> bool: ...
    def __ge__(self, value: Union[uuid.UUID, "UUID"], /) -> bool: ...

@final
class Policy:
    """What a generator does when a tick's counter runs out (``on_exhausted``: ``"wait"`` or
    ``"run-ahead"``), how far (``max_lead`` seconds) ids may run ahead of the wall clock, and
    what it does when the clock is behind the last id by more (``on_clock_behind``: ``"fail"``
    or ``"wait"``). Unset fields keep the scheme's default."""

    def __new__(
        cls,
        on_exhausted: Optional[str] = None,
        max_lead: Optional[float] = None,
        on_clock_behind: Optional[str] = None,
    ) -> Self: ...

_Id: TypeAlias = Union[uuid.UUID, int, str]

@final
class Generator:
    """A generator of any idforge scheme (``idforge.scheme_names()``).

    ``node``: the node id of schemes with a node field (snowflake, sonyflake, global-id, ...),
    the tag of nanots, the host id of nanots-host; idforge never picks one.
    ``shared`` (default: host-wide for every scheme with a stamp, unless ``at`` is given or
    ``$IDFORGE_SHARED`` is ``0``): the stamp lives in the host-wide state file ``idforge gen
    --shared`` uses (``state``, else ``$IDFORGE_STATE``, else the scheme's file under
    ``$IDFORGE_STATE_DIR`` or ``~/.local/state/idforge``); every process opening it draws from
    one sequence. ``shared=False`` keeps it in this process (and children forked after). A
    ``policy`` of its own or ``durable=True`` needs ``state`` or ``shared=False``: every user of
    a file must agree on both.
    ``clock``: ``"auto"``, ``"precise"``, ``"counter"`` or ``"ticker"``. ``at``: a fixed
    clock at this time (RFC 3339 text or an aware ``datetime``). ``format``/``prefix``: ``next()`` returns text in this format
    (``"dec"``, ``"hex"``, ``"base32"``, ``"uuid"``, ``"ulid"``, ``"xid"``, ``"typeid"``,
    ``"time"``), with this TypeID prefix. ``layout``: the bit layout of scheme ``"custom"``.

    >>> g = idforge.Generator("uuid7")
    >>> ids = g.take(1000)              # 1000 uuid.UUID, increasing
    >>> blob = g.take_bytes(1_000_000)  # 16 MB, big-endian, GIL released
    """

    def __new__(
        cls,
        scheme: str,
        node: Optional[int] = None,
        *,
        shared: Optional[bool] = None,
        state: Optional[Union[str, os.PathLike[str]]] = None,
        clock: str = "auto",
        policy: Optional[Policy] = None,
        layout: Optional[str] = None,
        format: Optional[str] = None,
        prefix: Optional[str] = None,
        host_digits: Optional[int] = None,
        at: Optional[Union[str, datetime.datetime]] = None,
        fast_random: bool = False,
        durable: bool = False,
        state_mode: Optional[int] = None,
        pid: Optional[int] = None,
        mac_fragment: Optional[int] = None,
        sequential: bool = False,
    ) -> Self: ...
    def next(self) -> _Id:
        """The next id: ``uuid.UUID`` for UUID schemes, ``int`` for decimal schemes, ``str``
        for text formats (or when ``format`` was given)."""
    def next_int(self) -> int: ...
    def next_str(self) -> str: ...
    def next_native(self) -> UUID: ...
    def take(self, n: int) -> List[_Id]: ...
    def take_ints(self, n: int) -> List[int]: ...
    def take_bytes(self, n: int) -> bytes:
        """``n`` ids, each big-endian in ``width`` bytes; the GIL is released meanwhile."""
    def format(self, id: Union[_Id, UUID]) -> str: ...
    def __iter__(self) -> Iterator[_Id]: ...
    def __next__(self) -> _Id: ...
    @property
    def scheme(self) -> str: ...
    @property
    def bits(self) -> int: ...
    @property
    def width(self) -> int: ...
    @property
    def is_uuid(self) -> bool: ...
    @property
    def returns(self) -> str:
        """What ``next()`` returns: ``"uuid"``, ``"int"`` or ``"str"``."""
    @property
    def state_path(self) -> Optional[pathlib.Path]: ...
    @property
    def lead(self) -> float: ...

def uuid7() -> uuid.UUID: ...
def uuid7_native() -> UUID: ...
def uuid4() -> uuid.UUID: ...
def uuid4_native() -> UUID: ...
def ulid() -> str: ...
def uprotocol() -> uuid.UUID: ...
def uprotocol_v8() -> uuid.UUID: ...
def nanots() -> int: ...
def locality() -> uuid.UUID: ...
def typeid(prefix: str = "") -> str: ...
def scheme_names() -> List[str]: ...
def fork_generation() -> int: ...
def inspect_dict(
    text: str,
    scheme: Optional[str] = None,
    format: Optional[str] = None,
    layout: Optional[str] = None,
    host_digits: Optional[int] = None,
) -> Dict[str, Any]: ...
