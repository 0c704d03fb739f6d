"""Exceptions raised by idforge, one class per kind of failure; each carries the library's
message (what is wrong and what to do) and ``kind``, the name of the library's error variant
(``"NodeRequired"``, ``"ClockBehind"``, ``"StateFile.Foreign"``, ...).

::

    IdforgeError
    ├── ConfigError (ValueError)          a scheme, option or format that cannot work
    │   ├── UnknownSchemeError
    │   └── NodeError                     node/host id missing or out of range
    ├── ParseError (ValueError)           id or time text that cannot be decoded
    ├── ClockError                        the clock is before the epoch, past the layout, ...
    │   └── ClockBehindError              the clock is behind the last id by more than max_lead
    ├── StateFileError (OSError)          a host-wide state file cannot be used
    │   ├── StateFileRefusedError         not idforge's, another scheme's, untrusted, corrupt...
    │   └── StateFileLostError            truncated, deleted or replaced while in use
    └── LeaseLostError                    a fleet member lost its node id lease
"""

from __future__ import annotations

__all__ = [
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
]


class IdforgeError(Exception):
    """Base class of every idforge exception.

    >>> import idforge
    >>> try:
    ...     idforge.Generator("snowflake")
    ... except idforge.errors.NodeError as e:
    ...     e.kind
    'NodeRequired'
    """

    kind: str = ""


class ConfigError(IdforgeError, ValueError):
    """A scheme, option, layout or format that cannot work as given."""


class UnknownSchemeError(ConfigError):
    """No scheme has this name (the message names the closest one)."""


class NodeError(ConfigError):
    """A node id (or nanots-host host id) is missing or does not fit the layout."""


class ParseError(IdforgeError, ValueError):
    """Id or time text that is not an id of the scheme, or is ambiguous."""


class ClockError(IdforgeError):
    """The clock cannot give this scheme a time."""


class ClockBehindError(ClockError):
    """The wall clock is behind the last issued id by more than the policy's ``max_lead``;
    nothing was issued."""


class StateFileError(IdforgeError, OSError):
    """A host-wide state file cannot be created, opened or used."""


class StateFileRefusedError(StateFileError):
    """The state file is refused: not idforge's, another scheme's or policy's, writable by
    others, corrupt, truncated or of another version."""


class StateFileLostError(StateFileError):
    """The state file was truncated, deleted or replaced while in use."""


class LeaseLostError(IdforgeError):
    """A fleet member no longer holds its node id lease."""
