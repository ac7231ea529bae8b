"""Run code right after a module is imported, without importing it.

Patching ``logging`` at ``rage.install()`` would cost every recorded tool the ~5 ms of
importing it, even tools that never log; a ``sys.meta_path`` entry runs the patch once the
tool imports ``logging`` itself, and costs nothing otherwise.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from importlib.machinery import ModuleSpec
    from typing import Any


class AfterImport:
    """A ``sys.meta_path`` entry that calls ``callback`` once module ``name`` has been
    imported (by anyone), then steps aside. Patching ``logging`` this way costs a tool that
    never logs nothing, instead of the ~5 ms of importing it."""

    def __init__(self, name: str, callback: Callable[[], None]) -> None:
        self.name = name
        self.callback = callback

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> ModuleSpec | None:
        if fullname != self.name:
            return None
        spec: ModuleSpec | None = None
        for finder in sys.meta_path:
            if finder is self:
                continue
            find = getattr(finder, "find_spec", None)
            if find is not None:
                spec = find(fullname, path, target)
                if spec is not None:
                    break
        loader = getattr(spec, "loader", None)
        exec_module = getattr(loader, "exec_module", None)
        if spec is None or exec_module is None:
            return spec
        callback = self.callback
        finder = self

        def exec_then_call(module: Any) -> None:
            exec_module(module)
            # stay in place until the module is really executed: find_spec() alone (an
            # availability check) imports nothing
            try:  # noqa: SIM105 - no contextlib on the start-up path
                sys.meta_path.remove(finder)
            except ValueError:
                pass
            try:  # noqa: SIM105 - no contextlib on the start-up path
                callback()
            except Exception:
                pass

        try:  # noqa: SIM105 - no contextlib on the start-up path
            loader.exec_module = exec_then_call  # type: ignore[union-attr]
        except AttributeError:  # a loader that does not take attributes: no patching
            pass
        return spec


def after_import(name: str, callback: Callable[[], None]) -> None:
    """Call ``callback`` now if ``name`` is imported, else right after it is."""
    if name in sys.modules:
        callback()
    else:
        sys.meta_path.insert(0, AfterImport(name, callback))
