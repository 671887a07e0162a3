"""Triton's CPU interpreter (`TRITON_INTERPRET=1`), made cheaper to enter; what it computes is unchanged.

Before every kernel launch, and at every call of a `@triton.jit` helper inside a kernel (once per
program of the grid), the interpreter swaps each builtin of `triton.language` for a wrapper that
runs it on NumPy, and it builds those wrappers anew each time: `inspect.getmembers` over the
language's modules and classes, a new function per builtin. On the CPU that was 21 % of the
candidates' workers' time over kbx's expert kernels (`_patch_builtin`, 2026-12-08). The wrappers
depend only on the builtin they wrap, so this module asks Triton's own `_patch_builtin` once per
module or class for the wrappers it would set, then only sets them: the same attributes, set to
equivalent functions, restored the same way.

Installed in the zygote before it forks a worker (kbx.sandbox.zygote), only for the interpreter;
with a Triton whose interpreter does not have the expected shape it leaves the interpreter as is.
"""

from __future__ import annotations

import inspect

PATCH_PARAMETERS = ["pkg", "builder", "scope"]  # triton.runtime.interpreter._patch_builtin's, in Triton 3.x


class _Recording:
    """A stand-in for the interpreter's patch scope that keeps what would be set instead of setting it."""

    def __init__(self) -> None:
        self.changes: list[tuple[object, str, object]] = []

    def set_attr(self, obj: object, name: str, value: object) -> None:
        self.changes.append((obj, name, value))


def install() -> bool:
    """Swap the interpreter's `_patch_builtin` for one that reuses its wrappers; False where this
    Triton's interpreter is not the one this was written against (then nothing changes)."""
    from triton.runtime import interpreter

    original = getattr(interpreter, "_patch_builtin", None)
    if getattr(original, "kbx_reuses_wrappers", False):
        return True  # installed already
    if original is None or list(inspect.signature(original).parameters) != PATCH_PARAMETERS:
        return False
    wrappers: dict[object, list[tuple[object, str, object]]] = {}

    def patch_builtin(pkg, builder, scope) -> None:
        if pkg not in wrappers:
            # The first call in a process comes with the language unpatched (no kernel ran before it), so
            # the recording holds every builtin; later calls may see some already wrapped, and set them again.
            recording = _Recording()
            original(pkg, builder, recording)
            wrappers[pkg] = recording.changes
        for obj, name, value in wrappers[pkg]:
            scope.set_attr(obj, name, value)

    patch_builtin.kbx_reuses_wrappers = True
    interpreter._patch_builtin = patch_builtin
    return True
