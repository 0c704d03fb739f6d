"""The fastest calls: ids as idforge's own :class:`idforge.UUID` type instead of the standard
library's ``uuid.UUID``. An ``idforge.UUID`` equals, hashes and orders like the ``uuid.UUID`` of
the same value and converts with ``to_uuid()``; it is not an instance of ``uuid.UUID``, so code
that checks ``isinstance(x, uuid.UUID)`` (ORMs, serialisers) needs ``idforge.uuid7()`` instead.

>>> import idforge
>>> u = idforge.native.uuid7()
>>> u.version, u == u.to_uuid()
(7, True)
"""

from ._idforge import uuid4_native as uuid4
from ._idforge import uuid7_native as uuid7

__all__ = ["uuid4", "uuid7"]
