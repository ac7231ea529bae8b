"""Go panics and fatal errors, in the runtime's documented format (``runtime/panic.go``
``printpanics``, ``runtime/traceback.go``); a frame's location line starts with a tab::

    panic: runtime error: index out of range [5] with length 3
    [signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x4553a2]   (sometimes)

    goroutine 1 [running]:
    main.get(...)
        /home/u/app/main.go:7
    main.main()
        /home/u/app/main.go:12 +0x1d
    exit status 2

``fatal error: ...`` (deadlock, concurrent map writes) has the same goroutine dump."""

from __future__ import annotations

from rage.crashes import rules
from rage.crashes.model import FRAMES_MAX, MESSAGE_MAX, Crash, Frame
from rage.crashes.text import normalise, split_location


def parse(lines: list[str]) -> Crash | None:
    start = None
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].startswith(("panic: ", "fatal error: ")) and _dump_follows(lines, i):
            start = i
            # a re-panic prints the first panic above it: report the first
            while start > 0 and lines[start - 1].startswith("panic: "):
                start -= 1
            break
    if start is None:
        return None
    kind = "go-fatal" if lines[start].startswith("fatal error: ") else "go-panic"
    message = lines[start].partition(": ")[2]
    message = message.removesuffix(" [recovered]").removesuffix(" [recovered, repanicked]")
    frames: list[Frame] = []
    for i in range(start + 1, min(len(lines), start + 10)):
        if lines[i].startswith("goroutine ") and lines[i].endswith(":"):
            frames = _frames(lines, i + 1)
            break
    return Crash(kind, normalise(message) or kind, message[:MESSAGE_MAX], tuple(frames), start)


def _dump_follows(lines: list[str], i: int) -> bool:
    return any(ln.startswith("goroutine ") for ln in lines[i + 1:i + 10])


def _frames(lines: list[str], at: int) -> list[Frame]:
    frames: list[Frame] = []
    i = at
    while i + 1 < len(lines) and len(frames) < FRAMES_MAX:
        call, loc = lines[i], lines[i + 1]
        if not call or not loc.startswith("\t") or call.startswith("created by "):
            break
        # "main.(*T).Run(0xc000010000, {0x4b0fc8, 0x3})": the arguments are the last (...)
        func = call[:call.rfind("(")] if call.endswith(")") and "(" in call else call
        path, line = split_location(loc.strip().split(" +0x", 1)[0])
        package = _package(func)
        library = rules.library_path(path) or _standard(package)
        frames.append(Frame(func[len(package) + 1:] or func, package, not library, path, line))
        i += 2
    return frames


def _package(func: str) -> str:
    # "github.com/a/b/pkg.(*T).M" -> "github.com/a/b/pkg"; "main.f" -> "main"
    slash = func.rfind("/")
    dot = func.find(".", slash + 1)
    return func[:dot] if dot > 0 else ""


def _standard(package: str) -> bool:
    # "panic(...)" and other runtime entries print without a package
    return not package or package.split("/", 1)[0] in rules.GO_STANDARD
