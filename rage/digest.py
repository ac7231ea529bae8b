"""sha256 of small inputs without loading OpenSSL.

``import hashlib`` loads OpenSSL (``_hashlib``): ~10M instructions, 2% of a small `rage
report`, which hashes only a few kilobytes (its members, the cache files' names). CPython's
own sha256 (``_sha256``, ``_sha2`` from 3.12) gives the same digest and loads in ~0.1M, but
hashes ~10x slower than OpenSSL's (5.6 ms a MB against 0.6 ms here): past :data:`SMALL`
bytes the hash comes from hashlib as before.
"""

from __future__ import annotations

TYPE_CHECKING = False  # (no typing import: the recorder's prebuild child loads this)
if TYPE_CHECKING:
    from typing import Any, Protocol

    class Hash(Protocol):
        def update(self, data: bytes | memoryview, /) -> None: ...
        def digest(self) -> bytes: ...
        def hexdigest(self) -> str: ...

SMALL = 256 * 1024  # at about this size the slower hash costs what loading OpenSSL does


def sha256(data: bytes = b"", *, size: int | None = None) -> Hash:
    """A new sha256 object (hashlib's interface: ``update``, ``digest``, ``hexdigest``) of
    ``data``; ``size``: about how many bytes it will hash in all, when more follow."""
    if (len(data) if size is None else size) <= SMALL:
        own = _builtin()
        if own is not None:
            got: Hash = own(data)
            return got
    import hashlib

    return hashlib.sha256(data)


def _builtin() -> Any:
    try:
        from _sha256 import sha256 as own  # type: ignore[import-not-found]  # CPython 3.11
    except ImportError:
        try:
            from _sha2 import sha256 as own  # type: ignore[import-not-found]  # CPython 3.12+
        except ImportError:
            return None  # another Python, or one built without them
    return own
