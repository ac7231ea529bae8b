"""Crash text of every runtime installed here, recorded by the real ``rage run`` and parsed
from the recorded ``stderr.log``: two variants of each program (another directory, lines
shifted, other values and argv) must share a signature, other causes must not.

Go is not installable here: its cases are texts in the format the Go runtime documents
(``runtime/panic.go``, ``runtime/traceback.go``), written for this test.
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from rage.crashes import parse, signature_of
from rage.crashes.model import FRAMES_MAX
from rage.record.history import RunStore
from tests.conftest import rage_cmd

C_SRC = """\
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int use_after(int n) { int *p = malloc(4 * sizeof(int)); free(p); return p[n % 4]; }
int other_use(int n) { int *q = malloc(8 * sizeof(int)); free(q); return q[n % 8]; }
int write_past(int n) { int *p = malloc(4 * sizeof(int)); p[4 + n] = 1; return p[0]; }
int deref(int *p) { return *p; }
void smash(const char *s) { char b[4]; strcpy(b, s); puts(b); }
void check(int n) { assert(n < 3); }
char *keep(int n) { char *p = malloc(16 + n); strcpy(p, "x"); return p; }
int add(int a, int b) { return a + b; }
int shift(int a, int b) { return a << b; }
int main(int argc, char **argv) {
  int n = atoi(argv[2]);
  if (!strcmp(argv[1], "uaf")) return use_after(n);
  if (!strcmp(argv[1], "uaf2")) return other_use(n);
  if (!strcmp(argv[1], "overflow")) return write_past(n);
  if (!strcmp(argv[1], "segv")) return deref((int *)(long)(n - n));
  if (!strcmp(argv[1], "smash")) { char s[64]; memset(s, 'a', 63); s[20 + n] = 0; smash(s); }
  if (!strcmp(argv[1], "free")) { int x = n; free(&x); }
  if (!strcmp(argv[1], "assert")) check(n);
  if (!strcmp(argv[1], "leak")) keep(n);
  if (!strcmp(argv[1], "ubadd")) return add(2147483600, n * 100);
  if (!strcmp(argv[1], "ubshift")) return shift(n, 40 + n);
  return 0;
}
"""

CPP_SRC = """\
#include <stdexcept>
#include <string>
#include <vector>
template <typename T> struct Box {
  T v;
  int get(int i) { int *p = new int[4]; delete[] p; return p[i % 4]; }
};
void load(int n) { throw std::runtime_error("bad value " + std::to_string(n)); }
int pick(int n) { std::vector<int> v(3); return v.at(n); }
int main(int argc, char **argv) {
  std::string m = argv[1];
  int n = std::stoi(argv[2]);
  if (m == "throw") load(n);
  if (m == "range") return pick(n);
  if (m == "uaf") { Box<std::vector<int>> b; return b.get(n); }
  return 0;
}
"""

RUST_SRC = """\
use std::collections::HashMap;
fn get(v: &[i32], i: usize) -> i32 { v[i] }
fn parse(s: &str) -> i32 { s.parse::<i32>().unwrap() }
fn lookup(m: &HashMap<String, i32>, k: &str) -> i32 { *m.get(k).unwrap() }
fn work(v: Vec<i32>, i: usize) -> i32 { v[i] * 2 }
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let n: usize = a[2].parse().unwrap();
    match a[1].as_str() {
        "idx" => println!("{}", get(&[1, 2, 3], 3 + n)),
        "parse" => println!("{}", parse(&format!("x{n}"))),
        "thread" => {
            let h = std::thread::spawn(move || work(vec![1, 2], 5 + n));
            println!("{}", h.join().unwrap())
        }
        _ => println!("{}", lookup(&HashMap::new(), &a[2])),
    }
}
"""

NODE_LIB = "exports.each = (xs, f) => xs.forEach(f);\n"
NODE_SRC = """\
const lib = require('lib');
function load(n) { if (n > 0) throw new Error('bad count ' + n); }
function save(n) { throw new Error('cannot save ' + n); }
function read(o) { return o.cfg.name; }
const [mode, n] = [process.argv[2], Number(process.argv[3])];
if (mode === 'throw') lib.each([n, n + 1], load);
if (mode === 'save') save(n);
if (mode === 'type') read({ n });
"""
NODE_ESM = "import x from 'no-such-package';\nconsole.log(x);\n"

JAVA_SRC = """\
import java.util.List;
public class App {
  static int parse(String s) { return Integer.parseInt(s); }
  static void load(String s) {
    try { parse(s); } catch (NumberFormatException e) {
      throw new IllegalStateException("bad config " + s, e);
    }
  }
  static void store(String s) { throw new IllegalStateException("cannot store " + s); }
  public static void main(String[] a) {
    if (a[0].equals("cause")) load("x" + a[1]);
    if (a[0].equals("state")) store(a[1]);
    if (a[0].equals("npe")) {
      String s = a[1].equals("never") ? "" : null;
      List.of(1, 2).forEach(i -> System.out.println(s.length() + i));
    }
  }
}
"""

# Go: the runtime's documented format (values, paths, lines and pcs differ per variant)
GO_INDEX = """\
panic: runtime error: index out of range [{i}] with length 3

goroutine 1 [running]:
main.get(...)
\t{root}/main.go:{l1}
main.main()
\t{root}/main.go:{l2} +0x{pc}
exit status 2
"""
GO_NIL_MAP = """\
panic: assignment to entry in nil map

goroutine 1 [running]:
myapp/store.Save(...)
\t{root}/store/store.go:{l1}
main.main()
\t{root}/main.go:{l2} +0x{pc}
exit status 2
"""
GO_NIL_POINTER = """\
panic: runtime error: invalid memory address or nil pointer dereference
[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x{pc}]

goroutine 1 [running]:
example.com/app/config.(*Config).Name(...)
\t{root}/config/config.go:{l1}
main.main()
\t{root}/main.go:{l2} +0x{pc}
exit status 2
"""
GO_DEADLOCK = """\
fatal error: all goroutines are asleep - deadlock!

goroutine 1 [chan receive]:
main.main()
\t{root}/main.go:{l1} +0x{pc}

goroutine {i} [select]:
main.worker(0xc0000{pc})
\t{root}/worker.go:{l2} +0x{pc}
created by main.main in goroutine 1
\t{root}/main.go:{l1} +0x{pc}
exit status 2
"""
GO_CUSTOM = """\
panic: config: missing key "{key}" in /etc/app/{key}.toml

goroutine 1 [running]:
main.mustGet({{0x4b1c2a, 0x{pc}}})
\t{root}/main.go:{l1} +0x{pc}
main.main()
\t{root}/main.go:{l2} +0x25
exit status 2
"""

# .NET and Ruby are not installed either: texts in their runtimes' documented formats
DOTNET_CHAIN = """\
Unhandled exception. System.InvalidOperationException: bad config x{i}
 ---> System.FormatException: The input string 'x{i}' was not in a correct format.
   at System.Number.ThrowFormatException[TChar](ReadOnlySpan`1 value)
   at App.Program.Parse(String s) in {root}/Program.cs:line {l1}
   --- End of inner exception stack trace ---
   at App.Program.Load(String s) in {root}/Program.cs:line {l2}
   at App.Program.Main(String[] args) in {root}/Program.cs:line {l2}
"""
DOTNET_FIRST = """\
Unhandled exception. System.InvalidOperationException: Sequence contains no elements
   at System.Linq.ThrowHelper.ThrowNoElementsException()
   at System.Linq.Enumerable.First[TSource](IEnumerable`1 source)
   at App.Store.Newest(List`1 items) in {root}/Store.cs:line {l1}
   at App.Program.Main(String[] args) in {root}/Program.cs:line {l2}
"""
RUBY_RAISE = """\
{root}/app.rb:{l1}:in `load': bad config x{i} (RuntimeError)
\tfrom {gems}/gems/thor-1.{i}/lib/thor.rb:{l2}:in `each'
\tfrom {root}/app.rb:{l2}:in `<main>'
"""
RUBY_NOMETHOD = """\
{root}/app.rb:{l1}:in `read': undefined method `name' for nil (NoMethodError)
\tfrom {root}/app.rb:{l2}:in `<main>'
"""

Sample = tuple[str, str, str, str]  # language, label (the cause), app, recorded text


def _pad(source: str, lines: int) -> str:
    # the second variant: every line number shifts
    return "// shifted\n" * lines + source if lines else source


def _have(*tools: str) -> bool:
    return all(shutil.which(t) for t in tools)


def _record(home: Path, app: str, argv: list[str], cwd: Path,
            env: dict[str, str] | None = None) -> str:
    """Run argv through the real ``rage run``; the recorded stderr.log."""
    full_env = {k: v for k, v in os.environ.items()
                if not k.startswith(("RAGE_", "RUST_BACKTRACE", "ASAN_", "UBSAN_"))}
    full_env.update({"RAGE_HOME": str(home), "RAGE_CONFIG": os.devnull})
    full_env.update(env or {})
    proc = subprocess.run(rage_cmd("run", "--app", app, "--", *argv), cwd=cwd, env=full_env,
                          capture_output=True, timeout=60, check=False)
    assert proc.returncode != 0, (argv, proc.stderr)
    (run_,) = RunStore(home).list(app).runs
    return (run_.dir / "stderr.log").read_text(errors="replace")


def _variants(base: Path, lang: str, build: Callable[[Path, int], list[str]]
              ) -> list[tuple[int, Path, list[str]]]:
    # variant 0 in one directory, variant 1 two levels deeper with its lines shifted by 7
    out = []
    for variant, (sub, shift) in enumerate((("a", 0), ("b/deeper/tree", 7))):
        where = base / lang / sub
        where.mkdir(parents=True)
        out.append((variant, where, build(where, shift)))
    return out


def _samples_c(base: Path, home: Path) -> list[Sample]:
    def build(where: Path, shift: int) -> list[str]:
        (where / "crash.c").write_text(_pad(C_SRC, shift))
        flags = ["-g", "-O0", "-o"]
        subprocess.run(["gcc", *flags, "plain", "-fstack-protector-all", "crash.c"],
                       cwd=where, check=True, capture_output=True)
        subprocess.run(["gcc", *flags, "asan", "-fsanitize=address", "crash.c"],
                       cwd=where, check=True, capture_output=True)
        subprocess.run(["gcc", *flags, "ubsan", "-fsanitize=undefined",
                        "-fno-sanitize-recover=undefined", "crash.c"],
                       cwd=where, check=True, capture_output=True)
        return []

    out = []
    for variant, where, _ in _variants(base, "c", build):
        for binary, mode in (("asan", "uaf"), ("asan", "uaf2"), ("asan", "overflow"),
                             ("asan", "segv"), ("plain", "smash"), ("plain", "free"),
                             ("plain", "assert"), ("ubsan", "ubadd"), ("ubsan", "ubshift"),
                             ("asan", "leak")):
            value = str(3 + 2 * variant)
            leaks = "1" if mode == "leak" else "0"
            text = _record(home, f"c-{mode}-{variant}", [str(where / binary), mode, value],
                           where, {"ASAN_OPTIONS": f"detect_leaks={leaks}"})
            out.append(("c", mode, "crashy-c", text))
    return out


def _samples_cpp(base: Path, home: Path) -> list[Sample]:
    def build(where: Path, shift: int) -> list[str]:
        (where / "crash.cpp").write_text(_pad(CPP_SRC, shift))
        subprocess.run(["g++", "-g", "-O0", "-o", "plain", "crash.cpp"], cwd=where, check=True,
                       capture_output=True)
        subprocess.run(["g++", "-g", "-O0", "-fsanitize=address", "-o", "asan", "crash.cpp"],
                       cwd=where, check=True, capture_output=True)
        return []

    out = []
    for variant, where, _ in _variants(base, "cpp", build):
        for binary, mode in (("plain", "throw"), ("plain", "range"), ("asan", "uaf")):
            text = _record(home, f"cpp-{mode}-{variant}",
                           [str(where / binary), mode, str(7 + variant * 5)], where)
            out.append(("cpp", mode, "crashy-cpp", text))
    return out


def _samples_rust(base: Path, home: Path) -> list[Sample]:
    def build(where: Path, shift: int) -> list[str]:
        (where / "main.rs").write_text(_pad(RUST_SRC, shift))
        subprocess.run(["rustc", "-g", "--crate-name", "crashy", "-o", "crashy", "main.rs"],
                       cwd=where, check=True, capture_output=True)
        return []

    out = []
    for variant, where, _ in _variants(base, "rust", build):
        for mode in ("idx", "parse", "none", "thread"):
            for backtrace in ("0", "1"):
                text = _record(home, f"rust-{mode}-{backtrace}-{variant}",
                               [str(where / "crashy"), mode, str(4 + variant)], where,
                               {"RUST_BACKTRACE": backtrace})
                # without a backtrace only the panicking file is known: its own group
                out.append(("rust", f"{mode}-bt{backtrace}", "crashy", text))
        # RUST_BACKTRACE=full: addresses, symbol hashes and crate disambiguators, and the
        # panic hook's own frames above the sentinel; the same group as RUST_BACKTRACE=1
        text = _record(home, f"rust-idx-full-{variant}", [str(where / "crashy"), "idx", "1"],
                       where, {"RUST_BACKTRACE": "full"})
        out.append(("rust", "idx-bt1", "crashy", text))
    return out


def _samples_node(base: Path, home: Path) -> list[Sample]:
    def build(where: Path, shift: int) -> list[str]:
        (where / "app.js").write_text(_pad(NODE_SRC, shift))
        (where / "node_modules" / "lib").mkdir(parents=True)
        (where / "node_modules" / "lib" / "index.js").write_text(NODE_LIB)
        (where / "esm.mjs").write_text(_pad(NODE_ESM, shift))
        return []

    out = []
    for variant, where, _ in _variants(base, "node", build):
        for mode in ("throw", "save", "type"):
            text = _record(home, f"node-{mode}-{variant}",
                           ["node", str(where / "app.js"), mode, str(2 + variant * 9)], where)
            out.append(("node", mode, "app", text))
        text = _record(home, f"node-esm-{variant}", ["node", str(where / "esm.mjs")], where)
        out.append(("node", "esm", "app", text))
    return out


PY_SRC = """\
import ctypes
import faulthandler
import sys


def crash(n):
    return ctypes.string_at(n - n)


def abort(n):
    import os
    os.abort()


faulthandler.enable()
{"crash": crash, "abort": abort}[sys.argv[1]](int(sys.argv[2]))
"""


def _samples_python(base: Path, home: Path) -> list[Sample]:
    def build(where: Path, shift: int) -> list[str]:
        (where / "native.py").write_text("# shifted\n" * shift + PY_SRC)
        return []

    out = []
    for variant, where, _ in _variants(base, "python", build):
        for mode in ("crash", "abort"):
            text = _record(home, f"py-{mode}-{variant}",
                           [sys.executable, str(where / "native.py"), mode, str(variant)], where)
            out.append(("python", mode, "native", text))
    return out


def _samples_java(base: Path, home: Path) -> list[Sample]:
    def build(where: Path, shift: int) -> list[str]:
        (where / "App.java").write_text(_pad(JAVA_SRC, shift))
        subprocess.run(["javac", "App.java"], cwd=where, check=True, capture_output=True)
        return []

    out = []
    for variant, where, _ in _variants(base, "java", build):
        for mode in ("cause", "state", "npe"):
            text = _record(home, f"java-{mode}-{variant}",
                           ["java", "-Xshare:auto", "-cp", str(where), "App", mode,
                            str(1 + variant * 40)], where)
            out.append(("java", mode, "App", text))
    return out


def _samples_go() -> list[Sample]:
    out = []
    for variant, (root, i, l1, l2, pc) in enumerate((("/home/alice/src/app", 5, 7, 12, "1d"),
                                                     ("/tmp/build/x/app", 9, 14, 21, "2f4"))):
        values = {"root": root, "i": i, "l1": l1, "l2": l2, "pc": pc, "key": f"k{variant}"}
        for label, template in (("index", GO_INDEX), ("nilmap", GO_NIL_MAP),
                                ("nilptr", GO_NIL_POINTER), ("deadlock", GO_DEADLOCK),
                                ("custom", GO_CUSTOM)):
            out.append(("go", label, "app", template.format(**values)))
    return out


def _samples_documented() -> list[Sample]:
    out = []
    for root, gems, i, l1, l2 in (
            ("/home/alice/src/app", "/home/alice/.gem/ruby/3.2.0", 5, 7, 12),
            ("/srv/build/x/app", "/usr/local/lib/ruby/3.3.0", 9, 14, 21)):
        values = {"root": root, "gems": gems, "i": i, "l1": l1, "l2": l2}
        for lang, label, template in (("dotnet", "chain", DOTNET_CHAIN),
                                      ("dotnet", "first", DOTNET_FIRST),
                                      ("ruby", "raise", RUBY_RAISE),
                                      ("ruby", "nomethod", RUBY_NOMETHOD)):
            out.append((lang, label, "app", template.format(**values)))
    return out


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> list[Sample]:
    """Every program, compiled once per module, run once per variant and cause."""
    base = tmp_path_factory.mktemp("crashes")
    home = base / "rage-home"
    out = _samples_go() + _samples_documented() + _samples_python(base, home)
    for tools, collect in ((("gcc",), _samples_c), (("g++",), _samples_cpp),
                           (("rustc",), _samples_rust), (("node",), _samples_node),
                           (("java", "javac"), _samples_java)):
        if _have(*tools):
            out += collect(base, home)
    return out


def _by(samples: list[Sample], lang: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for language, label, app, text in samples:
        if language == lang:
            sig = signature_of(text, app)
            assert sig is not None, f"{lang} {label}: no crash found in\n{text}"
            found.setdefault(label, []).append(sig[0])
    if not found:
        pytest.skip(f"{lang} is not installed here")
    return found


def _assert_groups(found: dict[str, list[str]]) -> None:
    for label, sigs in found.items():
        assert len(sigs) >= 2 and len(set(sigs)) == 1, (label, sigs)
    firsts = [sigs[0] for sigs in found.values()]
    assert len(set(firsts)) == len(firsts), found


@pytest.mark.parametrize("lang", ["c", "cpp", "rust", "node", "java", "go", "python",
                                  "dotnet", "ruby"])
def test_same_cause_same_signature_other_cause_other(samples: list[Sample], lang: str) -> None:
    _assert_groups(_by(samples, lang))


def test_signatures_name_the_failure_not_its_values(samples: list[Sample]) -> None:
    sigs = {(lang, label): signature_of(text, app) for lang, label, app, text in samples}
    texts = {k: v[0] for k, v in sigs.items() if v}
    # Socorro: the abort path and the panic machinery are skipped; the app's frame names it
    expected = {
        ("c", "uaf"): "asan: heap-use-after-free in use_after",
        ("c", "overflow"): "asan: heap-buffer-overflow in write_past",
        ("c", "segv"): "asan: SEGV in deref",
        ("c", "leak"): "lsan: memory-leak in keep",
        ("c", "smash"): "glibc-abort: *** stack smashing detected ***",
        ("c", "free"): "glibc-abort: free(): invalid pointer",
        ("c", "assert"): "glibc-assert: Assertion `n < <N>' failed in check",
        ("c", "ubadd"): "ubsan: signed integer overflow: <N> + <N> cannot be represented "
                        "in type 'int' in crash.c",
        ("cpp", "throw"): "cpp-terminate: std::runtime_error: bad value <N>",
        ("cpp", "uaf"): "asan: heap-use-after-free in Box<T>::get",
        ("rust", "idx-bt1"): "rust-panic: index out of bounds: the len is <N> but the index "
                             "is <N> in crashy::get",
        ("rust", "idx-bt0"): "rust-panic: index out of bounds: the len is <N> but the index "
                             "is <N> in main.rs (thread 'main')",
        ("rust", "none-bt1"): "rust-panic: called `Option::unwrap()` on a `None` value "
                              "in crashy::lookup",
        ("rust", "thread-bt1"): "rust-panic: index out of bounds: the len is <N> but the "
                                "index is <N> in crashy::work",
        ("rust", "thread-bt0"): "rust-panic: index out of bounds: the len is <N> but the "
                                "index is <N> in main.rs (thread '<unnamed>')",
        ("python", "crash"): "python-faulthandler: Segmentation fault in native.crash "
                             "< native.<module>",
        ("python", "abort"): "python-faulthandler: Aborted in native.abort < native.<module>",
        ("node", "throw"): "node: Error in app.load < app.Object.<anonymous>",
        ("node", "type"): "node: TypeError in app.read < app.Object.<anonymous>",
        ("java", "cause"): "java: java.lang.IllegalStateException in App.load < App.main; "
                           "caused by java.lang.NumberFormatException in App.parse < App.load",
        ("java", "npe"): "java: java.lang.NullPointerException in App.lambda$main < App.main",
        ("go", "index"): "go-panic: runtime error: index out of range [<N>] with length <N> "
                         "in main.get < main.main",
        ("go", "nilptr"): "go-panic: runtime error: invalid memory address or nil pointer "
                          "dereference in example.com/app/config.(*Config).Name < main.main",
        ("go", "deadlock"): "go-fatal: all goroutines are asleep - deadlock! in main.main",
        # a module named without a dot ("go mod init myapp") is still the app
        ("go", "nilmap"): "go-panic: assignment to entry in nil map in myapp/store.Save < "
                          "main.main",
        ("dotnet", "chain"): "dotnet: System.InvalidOperationException in App.Program.Load < "
                             "App.Program.Main; caused by System.FormatException in "
                             "App.Program.Parse",
        ("dotnet", "first"): "dotnet: System.InvalidOperationException in App.Store.Newest < "
                             "App.Program.Main",
        ("ruby", "raise"): "ruby: RuntimeError in app.load < app.<main>",
    }
    for key, want in expected.items():
        if key in texts:
            assert texts[key] == want, key
    for text in texts.values():
        assert not re.search(r"/(?:tmp|home)/|\.(?:c|rs|js|java|go):\d", text), text


def test_frames_are_structured_with_in_app_flags(samples: list[Sample]) -> None:
    by_key: dict[tuple[str, str], tuple[str, str]] = {}
    for lang, label, app, text in samples:
        by_key.setdefault((lang, label), (text, app))  # the first variant
    checks = {
        ("c", "uaf"): ("use_after", "crash.c", True),
        ("rust", "parse-bt1"): ("crashy::parse", "crashy", True),
        ("node", "throw"): ("exports.each", "lib", False),  # node_modules: a library
        ("java", "cause"): ("parseInt", "java.lang.Integer", False),
        ("go", "nilptr"): ("(*Config).Name", "example.com/app/config", True),
    }
    for key, (function, module, in_app) in checks.items():
        if key not in by_key:
            continue
        result = signature_of(*by_key[key])
        assert result is not None
        frames = [(f["function"], f["module"], f["in_app"]) for f in result[1]]
        assert (function, module, in_app) in frames, (key, frames)
    crash = parse(by_key[("go", "index")][0])
    assert crash is not None and crash.kind == "go-panic"
    assert [(f.function, f.file, f.line) for f in crash.frames] == [
        ("get", "/home/alice/src/app/main.go", 7), ("main", "/home/alice/src/app/main.go", 12)]


def _pairwise(samples: list[tuple[str, str]]) -> tuple[float, float]:
    """Pairwise precision and recall of signatures against labels."""
    tp = fp = fn = 0
    for (label_a, sig_a), (label_b, sig_b) in itertools.combinations(samples, 2):
        same_label, same_sig = label_a == label_b, sig_a == sig_b
        tp += same_label and same_sig
        fp += same_sig and not same_label
        fn += same_label and not same_sig
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    return precision, recall


def test_pairwise_precision_and_recall(samples: list[Sample]) -> None:
    # the receiver's key is the app and the signature: so is the labelled comparison here
    labelled: dict[str, list[tuple[str, str]]] = {}
    for lang, label, app, text in samples:
        sig = signature_of(text, app)
        labelled.setdefault(lang, []).append((f"{lang}:{label}", f"{app}\x1f{sig and sig[0]}"))
    everything = [pair for pairs in labelled.values() for pair in pairs]
    for lang, pairs in sorted(labelled.items()):
        precision, recall = _pairwise(pairs)
        print(f"{lang}: {len(pairs)} crashes, precision {precision:.3f}, recall {recall:.3f}")
    precision, recall = _pairwise(everything)
    print(f"all: {len(everything)} crashes, precision {precision:.3f}, recall {recall:.3f}")
    assert precision >= 0.98 and recall >= 0.95


HOSTILE = [
    "    at " + "a (" * 400_000,
    "thread 'main' panicked at " + "a:1:" * 400_000,
    "==1==ERROR: AddressSanitizer: " + "-" * 1_000_000,
    "\tat " + "a." * 500_000 + "(",
    "panic: " + "0x1 " * 300_000 + "\n\ngoroutine 1 [running]:\n" + "f(\n\t" * 100_000,
    "x.c:1:1: runtime error: " + "1 " * 500_000,
    "prog: a.c:1: " + "f::" * 300_000 + ": Assertion `" + "x" * 100_000 + "' failed.",
    "Exception in thread \"" + "\" " * 500_000,
    "Error: x\n" + "    at f (/a/b.js:1:1)\n" * 200_000,
    "E: x\n    at f (/a/B.java:1:1)\n" * 100_000,
    "a.B: m\n\tat a.b(c)\nCaused by: a.C: n\n" * 100_000,
    ("panic: x\n" + "goroutine 1 [running]:\n" * 9) * 20_000,
    "Unhandled exception. A.B: m\n" + " ---> C.D: n\n" * 100_000 + "   at A.B()\n" * 100_000,
    "a.rb:1:in `f': m (E)\n" * 100_000,
    "Fatal Python error: x\nCurrent thread 0x1:\n" + '  File "a", line 1 in f\n' * 200_000,
    "stack backtrace:\n" + "   1: " + "<" * 200_000 + "\n" + "thread 'm' panicked at a.rs:1:1:\nx\n"
    "stack backtrace:\n" + "   1: f\n" * 200_000,
]


@pytest.mark.timeout(60)  # a hang guard: a backtracking pattern takes hours on these
@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_text_is_parsed_in_bounded_time(text: str) -> None:
    result = signature_of(text, "app")
    if result is not None:
        assert len(result[0]) <= 1000 and len(result[1]) <= FRAMES_MAX * 8


def test_no_crash_report_is_none() -> None:
    assert signature_of("building...\nerror: disk full\n", "app") is None
    assert signature_of("", "app") is None


def test_formats_seen_in_the_field() -> None:
    # logback's packaging data after each frame, and a Suppressed: block inside a chain
    java = ("Exception in thread \"worker-3\" java.lang.IllegalStateException: boom\n"
            "\tat com.acme.Job.run(Job.java:12) ~[app.jar:1.0]\n"
            "\tat java.base/java.lang.Thread.run(Thread.java:833) [na:na]\n"
            "\tSuppressed: java.io.IOException: close failed\n"
            "\t\tat com.acme.Res.close(Res.java:4)\n"
            "Caused by: java.io.FileNotFoundException: /etc/acme.conf\n"
            "\tat com.acme.Conf.open(Conf.java:8)\n"
            "\t... 2 more\n")
    result = signature_of(java, "acme")
    assert result is not None
    assert result[0] == ("java: java.lang.IllegalStateException in com.acme.Job.run; caused by "
                         "java.io.FileNotFoundException in com.acme.Conf.open")
    assert [(f["module"], f["function"], f["in_app"]) for f in result[1]] == [
        ("com.acme.Job", "run", True), ("java.lang.Thread", "run", False),
        ("com.acme.Conf", "open", True)]
    # a release build: the app's frames and its dependencies' have no source path; a
    # crate named like the app is the app, other crates are libraries and accumulate
    rust = ("thread 'main' panicked at src/main.rs:9:5:\nbad input\nstack backtrace:\n"
            "   0: __rustc::rust_begin_unwind\n"
            "             at /rustc/abc/library/std/src/panicking.rs:689:5\n"
            "   1: core::panicking::panic_fmt\n"
            "   2: serde_json::de::from_str::h0123456789abcdef\n"
            "   3: my_tool::load::h0123456789abcdef\n"
            "   4: my_tool::main\n")
    result = signature_of(rust, "my-tool")
    assert result is not None
    assert result[0] == "rust-panic: bad input in serde_json::de::from_str < my_tool::load"
    assert [f["in_app"] for f in result[1]][2:] == [False, True, True]
    # UBSan with print_stacktrace=1: the frames, not the file
    ubsan = ("/src/a.c:5:12: runtime error: index 9 out of bounds for type 'int [4]'\n"
             "    #0 0x55d1 in lookup /src/a.c:5\n    #1 0x55d2 in main /src/a.c:9\n"
             "    #2 0x7f00 in __libc_start_main (/lib/x86_64-linux-gnu/libc.so.6+0x2d)\n")
    result = signature_of(ubsan, "a")
    assert result is not None
    assert result[0] == "ubsan: index <N> out of bounds for type 'int [<N>]' in lookup"
