"""rage.digest: CPython's own sha256 for small inputs, hashlib's (OpenSSL) past SMALL; the
same digests either way."""

from __future__ import annotations

import hashlib

import pytest

from rage.digest import SMALL, sha256


@pytest.mark.parametrize("n", [0, 1, 55, 64, SMALL, SMALL + 1, 3 * SMALL])
def test_the_digest_is_sha256s_whatever_the_size(n: int) -> None:
    data = bytes(range(256)) * (n // 256) + b"x" * (n % 256)
    assert sha256(data).hexdigest() == hashlib.sha256(data).hexdigest()
    h = sha256(size=n)  # fed in pieces, as files are
    for i in range(0, n, 10_000):
        h.update(data[i:i + 10_000])
    assert h.digest() == hashlib.sha256(data).digest()


def test_small_inputs_are_not_hashed_by_openssl() -> None:
    assert type(sha256(b"abc")).__module__ in {"_sha256", "_sha2"}
    assert type(sha256(size=SMALL + 1)).__module__ == "_hashlib"
