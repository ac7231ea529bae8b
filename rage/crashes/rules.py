"""The data the crash signatures follow: which frames say nothing about the bug (skip),
which only say where it surfaced (prefix: kept, and the next frame is added), where the
interesting part of a stack begins (sentinel), and which paths and names are library code
rather than the app's. One table per concern; the source of each entry is named beside it.

Entries match a *normalised* function name (:func:`rage.crashes.symbols.normalise`) either
exactly (``=``) or as a prefix (``^``): plain string comparisons, never a pattern, so a
hostile name costs one pass.

Sources:
- socorro: mozilla-services/socorro ``socorro/signature/siglists/irrelevant_signature_re.txt``,
  ``prefix_signature_re.txt`` and ``signature_sentinels.txt`` (Socorro's own entries are
  regular expressions; these are the literal prefixes they stand for).
- sentry: getsentry/sentry ``src/sentry/grouping/enhancer/enhancement-configs/
  all-platforms@2026-01-20.txt``: ``-app`` for ``**/node_modules/**``, ``**/vendor/**``,
  ``**/site-packages/**``, ``**/go/pkg/mod/**``, ``/lib/**``, ``/usr/lib/**``,
  ``/usr/local/lib/**``, ``**/.local/share/**``, Rust's ``std::*``, ``core::*``,
  ``alloc::*``, ``__rust_*``, ``rust_begin_unwind``, Kotlin, and the Java ``std`` and
  ``framework`` categories (``java.*``, ``jdk.*``, ``sun.*``, ``com.sun.*``, ``scala.*``,
  ``org.apache.*``, ``org.springframework.*`` ...).
- rust: the Rust standard library's panic path (``library/std/src/panicking.rs``,
  ``library/core/src/panicking.rs``): every frame from the panic hook down to the frame that
  called ``panic!``/``unwrap`` is the machinery, not the bug.
- glibc: glibc's abort path (``stdlib/abort.c``, ``sysdeps/.../raise.c``,
  ``debug/fortify_fail.c``, ``malloc/malloc.c`` ``malloc_printerr``) and its start-up
  (``csu/libc-start.c``).
- sanitizers: compiler-rt/libsanitizer print their own interceptor as frame #0
  (``malloc``, ``free``, ``operator new``, ``memcpy`` ...) in the sanitizer runtime.
- rage: rage's own reading where no anchor has a rule for a runtime, in the anchors'
  spirit: Node's ``node:`` internals, the standard libraries of Go (pkg.go.dev/std), .NET
  (``System.*``, ``Microsoft.*``) and Ruby (``gems/``, ``lib/ruby/``), JUnit's runner.
"""

from __future__ import annotations

# (match, name, source): frames that say nothing about the bug; skipped
SKIP: tuple[tuple[str, str, str], ...] = (
    ("=", "abort", "socorro"), ("=", "raise", "socorro"), ("=", "gsignal", "socorro"),
    ("^", "__GI_", "socorro"), ("^", "__GI___", "socorro"), ("=", "__libc_message", "socorro"),
    ("=", "__libc_fatal", "socorro"), ("^", "__fortify_fail", "socorro"),
    ("^", "__chk_fail", "socorro"), ("=", "__stack_chk_fail", "glibc"),
    ("^", "__pthread_kill", "glibc"), ("=", "pthread_kill", "glibc"),
    ("^", "malloc_printerr", "glibc"), ("^", "__libc_start_main", "glibc"),
    ("^", "__libc_start_call_main", "glibc"), ("=", "_start", "glibc"),
    ("=", "__assert_fail", "socorro"), ("^", "__assert_fail_base", "glibc"),
    ("^", "__cxa_throw", "socorro"), ("^", "__cxa_rethrow", "socorro"),
    ("^", "__gnu_cxx::__verbose_terminate_handler", "glibc"),
    ("^", "__cxxabiv1::__terminate", "glibc"), ("^", "std::terminate", "glibc"),
    ("^", "__memcpy", "socorro"), ("^", "__memmove", "socorro"), ("^", "__memset", "socorro"),
    ("^", "__memcmp", "socorro"),
    # Rust's panic machinery
    ("=", "rust_begin_unwind", "socorro"), ("^", "__rustc::rust_begin_unwind", "rust"),
    ("^", "core::panicking::", "socorro"), ("^", "std::panicking::", "rust"),
    ("^", "std::panic::", "rust"), ("^", "std::rt::", "rust"),
    ("^", "std::backtrace_rs::", "rust"), ("^", "std::sys::backtrace::", "rust"),
    ("^", "<std::sys::backtrace::", "rust"), ("^", "std::sys_common::backtrace::", "rust"),
    ("^", "core::result::unwrap_failed", "socorro"),
    ("^", "core::option::unwrap_failed", "socorro"),
    ("^", "core::option::expect_failed", "socorro"),
    ("^", "core::result::Result<T>::", "socorro"),
    ("^", "core::option::Option<T>::", "socorro"), ("^", "core::ops::function::", "socorro"),
    ("^", "core::fmt::", "rust"), ("^", "<core::fmt::", "rust"),
    ("^", "core::intrinsics", "socorro"), ("^", "compiler_builtins::", "socorro"),
    ("^", "alloc::alloc::handle_alloc_error", "socorro"),
    # indexing: Socorro skips core::slice::index and alloc::vec::impl; rustc now names
    # these frames by their trait impls
    ("^", "core::slice::index::", "socorro"), ("^", "<usize as core::slice::index::", "rust"),
    ("^", "<core::ops::range::", "socorro"), ("^", "alloc::vec::impl", "socorro"),
    ("^", "<alloc::vec::Vec<T> as core::ops::index::", "rust"),
)

# frames where a bug surfaces but is not: kept, and the frame that called them is added
PREFIX: tuple[tuple[str, str, str], ...] = (
    ("=", "malloc", "socorro"), ("=", "calloc", "socorro"), ("=", "realloc", "socorro"),
    ("=", "free", "socorro"), ("^", "operator new", "socorro"),
    ("^", "operator delete", "socorro"), ("^", "core::str::slice_error_fail", "socorro"),
    ("^", "alloc::raw_vec::capacity_overflow", "socorro"),
    ("^", "core::ptr::drop_in_place", "socorro"), ("^", "strlen", "socorro"),
    ("^", "strcpy", "socorro"), ("^", "memcpy", "socorro"), ("^", "memmove", "socorro"),
)

# the stack above the last of these is the crash reporter itself: start below it
SENTINELS: tuple[tuple[str, str, str], ...] = (
    ("=", "rust_begin_unwind", "rust"), ("^", "__rustc::rust_begin_unwind", "rust"),
    ("^", "std::sys::backtrace::__rust_end_short_backtrace", "rust"),
)

# path fragments of code that is not the app's (in-app false)
LIBRARY_PATHS: tuple[tuple[str, str], ...] = (
    ("/node_modules/", "sentry"), ("/usr/local/lib/", "sentry"), ("/.local/share/", "sentry"),
    ("/rustc/", "rust"), ("/.cargo/registry/", "rust"),
    ("/.cargo/git/", "rust"), ("/.rustup/toolchains/", "rust"), ("/pkg/mod/", "sentry"),
    ("/vendor/", "sentry"), ("/gems/", "rage"), ("/lib/ruby/", "rage"),
    ("/usr/include/", "glibc"), ("/usr/lib/", "sentry"),
    ("/lib/x86_64-linux-gnu/", "sentry"), ("/lib64/", "sentry"), ("libsanitizer", "sanitizers"),
    ("compiler-rt", "sanitizers"), ("libasan.so", "sanitizers"), ("libubsan.so", "sanitizers"),
    ("libstdc++", "glibc"), ("/libc.so", "glibc"), ("../sysdeps/", "glibc"),
    ("../csu/", "glibc"), ("/go/src/runtime/", "rage"), ("/libexec/src/", "rage"),
)
# the runtimes' own sanitizer code: an interceptor frame is never the bug
SANITIZER_PATHS = ("libsanitizer", "compiler-rt", "libasan.so", "libubsan.so",
                   "liblsan.so", "libtsan.so")

# name prefixes of library code per language (in-app false)
LIBRARY_NAMES: dict[str, tuple[tuple[str, str], ...]] = {
    "rust": (("std::", "sentry"), ("core::", "sentry"), ("alloc::", "sentry"),
             ("__rust_", "sentry"), ("rust_begin_unwind", "sentry"), ("__rustc::", "rust"),
             # the same crates inside a qualified path: "<std::fs::File as std::io::Read>"
             ("<std::", "rust"), ("<core::", "rust"), ("<alloc::", "rust"), ("<<std::", "rust"),
             ("<&dyn core::", "rust")),
    "java": (("java.", "sentry"), ("javax.", "sentry"), ("jdk.", "sentry"), ("sun.", "sentry"),
             ("com.sun.", "sentry"), ("kotlin.", "sentry"), ("kotlinx.", "sentry"),
             ("scala.", "sentry"), ("org.apache.", "sentry"), ("org.springframework.", "sentry"),
             ("com.fasterxml.", "sentry"), ("io.netty.", "sentry"), ("io.ktor.", "sentry"),
             ("akka.", "sentry"), ("reactor.core.", "sentry"), ("org.junit.", "rage")),
    "dotnet": (("System.", "rage"), ("Microsoft.", "rage"), ("Internal.", "rage")),
    "node": (("node:", "rage"), ("<anonymous>", "rage"), ("native", "rage"),
             ("internal/", "rage")),
}

# Go's standard library, by the first element of the package path (the top-level packages
# listed at pkg.go.dev/std): a module's own packages ("example.com/app/x", or "myapp/x"
# for a module named without a dot) are not among them
GO_STANDARD = frozenset((
    "archive", "arena", "bufio", "builtin", "bytes", "cmp", "compress", "container",
    "context", "crypto", "database", "debug", "embed", "encoding", "errors", "expvar", "flag",
    "fmt", "go", "hash", "html", "image", "index", "internal", "io", "iter", "log", "maps",
    "math", "mime", "net", "os", "path", "plugin", "reflect", "regexp", "runtime", "slices",
    "sort", "strconv", "strings", "structs", "sync", "syscall", "testing", "text", "time",
    "unicode", "unique", "unsafe", "weak"))

# glibc's fatal messages (malloc/malloc.c malloc_printerr; debug/fortify_fail.c,
# debug/stack_chk_fail.c: "*** %s ***: terminated"; assert/assert.c)
GLIBC_MESSAGES: tuple[str, ...] = (
    "*** stack smashing detected ***", "*** buffer overflow detected ***",
    "free(): ", "double free or corruption", "malloc(): ", "realloc(): ", "calloc(): ",
    "munmap_chunk(): ", "corrupted size vs. prev_size", "corrupted double-linked list",
    "malloc_consolidate(): ", "_int_free(): ", "_int_malloc(): ", "tcache_thread_shutdown(): ",
    "Fatal glibc error: ", "*** longjmp causes uninitialized stack frame ***",
)


def _matches(table: tuple[tuple[str, str, str], ...], name: str) -> str | None:
    for how, entry, source in table:
        if name == entry or (how == "^" and name.startswith(entry)):
            return source
    return None


def skipped(name: str) -> str | None:
    """The source of the rule that makes ``name`` irrelevant, if one does."""
    return _matches(SKIP, name)


def prefix(name: str) -> str | None:
    return _matches(PREFIX, name)


def sentinel(name: str) -> bool:
    return _matches(SENTINELS, name) is not None


def library_path(path: str) -> bool:
    return any(fragment in path for fragment, _source in LIBRARY_PATHS)


def library_name(language: str, name: str) -> bool:
    return any(name.startswith(p) for p, _source in LIBRARY_NAMES.get(language, ()))


def python_library(path: str) -> bool:
    """The standard library and installed packages (as rage's Python signature decides):
    ``site-packages``, ``dist-packages``, ``lib/python3.12/``, ``<frozen ...>``."""
    if path.startswith("<frozen"):
        return True
    if "/site-packages/" in path or "/dist-packages/" in path:
        return True
    at = path.find("/lib/python")
    return at >= 0 and path[at + len("/lib/python"):at + len("/lib/python") + 1].isdigit()


def sanitizer_path(path: str) -> bool:
    return any(fragment in path for fragment in SANITIZER_PATHS)
