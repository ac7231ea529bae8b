"""JSON Web Keys: the private members of a JWK (RSA ``d``, ``p``, ``q``, ``dp``, ``dq``,
``qi``; EC and OKP ``d``; a symmetric key's ``k``, RFC 7518 section 6) are private keys, in
whatever form a tool prints them: one line (a log, ``jose`` output), pretty-printed
(``step crypto jwk create``), inside a JWKS, as escaped JSON in a JSON log line. The public
members (``n``, ``e``, ``x``, ``y``, ``crv``, ``kid``) are evidence and stay, and so does a
public JWKS as an identity provider serves it.

Found by trying a private JWK as an attacker would plant it: every member was kept.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys

import pytest

from rage.redact import Redactor

B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"


def _b64(rng: random.Random, n: int) -> str:
    return "".join(rng.choices(B64URL, k=n))


def _rsa(rng: random.Random) -> dict[str, str]:
    return {"kty": "RSA", "kid": "2026-12-key-1", "use": "sig", "alg": "RS256",
            "n": _b64(rng, 342), "e": "AQAB", "d": _b64(rng, 342), "p": _b64(rng, 171),
            "q": _b64(rng, 171), "dp": _b64(rng, 171), "dq": _b64(rng, 171),
            "qi": _b64(rng, 171)}


def _ec(rng: random.Random) -> dict[str, str]:
    return {"crv": "P-256", "d": _b64(rng, 43), "kty": "EC", "x": _b64(rng, 43),
            "y": _b64(rng, 43)}


def _oct(rng: random.Random) -> dict[str, str]:
    return {"kty": "oct", "kid": "hmac-1", "k": _b64(rng, 43), "alg": "HS256"}


PRIVATE = ("d", "p", "q", "dp", "dq", "qi", "k")


def _forms(key: dict[str, str]) -> dict[str, str]:
    compact = json.dumps(key, separators=(",", ":"))
    return {
        "compact": compact,
        "log-line": f"2026-12-02T10:00:00Z DEBUG oidc: loaded signing key {compact} from vault",
        "pretty": json.dumps(key, indent=2),
        "jwks": json.dumps({"keys": [key, {**key, "kid": "other"}]}, indent=2),
        "escaped-in-json-log": json.dumps({"level": "debug", "msg": "jwk " + compact}),
        "python-repr": f"key = {key!r}",
    }


def _cases() -> list[tuple[str, str, dict[str, str]]]:
    out = []
    for kind, make in (("rsa", _rsa), ("ec", _ec), ("oct", _oct)):
        key = make(random.Random(f"jwk:{kind}"))
        for form, text in _forms(key).items():
            out.append((f"{kind}-{form}", text, key))
    return out


@pytest.mark.parametrize(("text", "key"), [(t, k) for _n, t, k in _cases()],
                         ids=[n for n, _t, _k in _cases()])
def test_private_members_go_public_ones_stay(text: str, key: dict[str, str]) -> None:
    r = Redactor(pseudonymize=False)
    out = r.text(text)
    for member in PRIVATE:
        if member in key:
            assert key[member] not in out, member
    for member in ("n", "x", "y", "kid", "crv"):
        if member in key:
            assert key[member] in out, member
    assert r.counts.get("private-key", 0) >= 1


def test_a_public_jwks_stays_byte_for_byte() -> None:
    rng = random.Random("jwk:public")
    keys = [{k: v for k, v in _rsa(rng).items() if k not in PRIVATE} for _ in range(2)]
    keys.append({k: v for k, v in _ec(rng).items() if k != "d"})
    for text in (json.dumps({"keys": keys}), json.dumps({"keys": keys}, indent=2)):
        r = Redactor(pseudonymize=False)
        assert r.text(text) == text
        assert r.counts == {}


def test_a_pretty_jwk_printed_by_a_real_program_goes_through_rage_redact() -> None:
    """A real subprocess prints a private JWK over many lines; `rage redact` (the filter a
    report's files go through) keeps none of its private members."""
    key = _rsa(random.Random("jwk:cli"))
    printer = subprocess.run(
        [sys.executable, "-c", "import json, sys; print(json.dumps(json.loads(sys.argv[1]), "
         "indent=4))", json.dumps(key)], capture_output=True, check=True)
    out = subprocess.run([sys.executable, "-m", "rage", "redact", "-"], input=printer.stdout,
                         capture_output=True, check=True).stdout.decode()
    assert all(key[m] not in out for m in PRIVATE if m in key)
    assert key["n"] in out and out.count("[REDACTED:private-key]") == len(PRIVATE) - 1


@pytest.mark.parametrize("cut", [0, 1, 2, 3, 5, 8])
def test_a_jwk_cut_by_the_stream_is_redacted_whole(cut: int) -> None:
    """A streamed input is redacted block by block: a block never ends inside a JWK, even
    when its private member comes before `kty` (keys printed in sorted order)."""
    key = _ec(random.Random("jwk:stream"))  # crv, d, kty, x, y: `d` before `kty`
    lines = json.dumps(key, indent=2).encode().split(b"\n")
    head = b"2026-12-02 INFO filler line of an ordinary log\n" * 200
    text = head + b"\n".join(lines) + b"\n" + b"tail\n" * 10
    at = len(head) + sum(len(x) + 1 for x in lines[:cut])  # the chunk ends here
    r = Redactor(pseudonymize=False)
    out = b"".join(r.stream(iter([text[:at], text[at:]]), block=len(head) // 2, workers=1))
    assert key["d"].encode() not in out
    assert key["x"].encode() in out
    assert out.count(b"\n") == text.count(b"\n")
