"""Redactor.data redacts each distinct string of a listing once (a packages listing repeats
its keys and its paths hundreds of times), with the output, counts and pseudonyms of
redacting every occurrence: the same walk with nothing remembered is the reference."""

from __future__ import annotations

from typing import Any

from rage.redact import Redactor

HOME = "/home/mallory"
TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


class _Forgetful(dict[str, Any]):
    """A memo that keeps nothing: every occurrence is redacted, as before."""

    def __setitem__(self, key: str, value: Any) -> None:
        pass


class _Counting(Redactor):
    """Counts the engine's runs (no real observable tells them apart from the output)."""

    runs = 0

    def bytes(self, b: bytes) -> bytes:
        self.runs += 1
        return super().bytes(b)


def redactor(cls: type[Redactor] = Redactor) -> Redactor:
    return cls(pseudonymize=True, home=HOME, user="mallory", hostname="build-host-7")


def listing() -> dict[str, Any]:
    dists = [{"name": f"pkg{i % 7}", "version": "1.0", "location": f"{HOME}/venv/lib",
              "shadowed": False} for i in range(60)]
    return {
        "distributions": dists,
        # other people's homes are numbered in order of first appearance, again and again
        "paths": ["/home/bob/x", "/home/carol/y", "/home/bob/x", f"{HOME}/z", "/home/bob/x"],
        "env": {"GITHUB_TOKEN": TOKEN, "NOTE": f"token={TOKEN}", "AGAIN": f"token={TOKEN}"},
        "argv": ["tool", "--password", "hunter2hunter2", "--password", "hunter2hunter2"],
        "logs": [f"Authorization: Bearer {TOKEN}"] * 3 + ["on build-host-7"] * 3,
        "sql": ["CREATE TABLE users (name text, password text)",
                "INSERT INTO users VALUES ('ann', 'pw-Secret-123')",
                "CREATE TABLE users (name text, password text)",
                "INSERT INTO users VALUES ('ann', 'pw-Secret-123')"],
        "nested": [[f"{HOME}/venv/lib", ("/home/dave/q", "/home/dave/q")]] * 3,
    }


def test_the_same_output_counts_and_pseudonyms_as_every_occurrence_redacted() -> None:
    fast, slow = redactor(), redactor()
    for r in (fast, slow):
        r.learn([{"API_KEY": "k3y-Value-0123456789"}], [])
    obj = listing()
    got = fast.data(obj)
    want = slow._data(obj, _Forgetful())
    assert got == want
    assert fast.counts == slow.counts and sum(fast.counts.values()) > 80
    assert fast.pseudonym_map() == slow.pseudonym_map()
    bob, carol, bob2, _mine, bob3 = got["paths"]
    assert bob == bob2 == bob3 != carol and "bob" not in repr(got) and TOKEN not in repr(got)
    # and again, now that the names are numbered: the second call agrees too
    assert fast.data(obj) == slow._data(obj, _Forgetful())
    assert fast.counts == slow.counts


def test_each_distinct_string_is_redacted_once() -> None:
    r = redactor(_Counting)
    dists = [{"name": "same", "version": "1.0", "location": f"{HOME}/venv/lib"}] * 87
    r.data({"distributions": dists})
    # the outer key, then four keys and values of the first entry ("1.0" is one string)
    assert r.runs == 1 + 3 + 3  # type: ignore[attr-defined]
    assert r.counts == {"home": 87}


def test_a_string_is_redacted_once_across_calls_and_learn_forgets() -> None:
    """What one call redacted, a later call in the same state reuses (a report's sections,
    its environment and its metadata repeat their keys and paths); the counts are those of
    every occurrence. learn() puts back the names it numbered, so what it saw is redone."""
    r = redactor(_Counting)
    entry = {"name": "same", "location": f"{HOME}/venv/lib"}
    r.data({"a": entry})
    r.data({"b": entry})  # (the home's first redaction noted it: a new state, redone once)
    runs = r.runs  # type: ignore[attr-defined]
    assert r.data({"b": entry}) == {"b": {"name": "same", "location": "~/venv/lib"}}
    assert r.runs == runs and r.counts == {"home": 3}  # type: ignore[attr-defined]
    slow = redactor()
    for obj in ({"p": "/home/bob/x"}, {"q": "/home/bob/x", "r": "/home/carol/y"}):
        assert r.data(obj) == slow._data(obj, _Forgetful())
    # learn() numbers /home/dave, then forgets it: its number goes to erin next, and dave's
    # paths it saw (the second one kept, in that state) are dave's again, with a new number
    r.learn([{"A": "/home/dave/z", "B": "/home/dave/w"}], [])
    after = {"t": "/home/erin/z", "s": "/home/dave/w"}
    assert r.data(after) == slow._data(after, _Forgetful())
    assert r.counts == slow.counts | {"home": 3}
    assert r.pseudonym_map() == slow.pseudonym_map()
