"""The Triton kernels each expert launches, and whether the GPU compiler's front end accepts them.

Triton's CPU interpreter runs code that its compiler refuses: a draft of Math/bessel_j1's expert reassigned
a constexpr inside `tl.static_range`, passed on the CPU and failed to compile on an H200 with triton 3.6
(2026-12-01, docs/BENCHMARKS.md); tests/fixtures/interpreter_only_kernel.py is a kind that 3.9 still refuses.
So an expert is run once under the interpreter (`capture`, in a process with TRITON_INTERPRET=1) on its
smallest correctness case that runs without an error and launches a kernel, with every launch recorded as
its kernel, argument types, constexpr values and launch options; then each kernel so launched is compiled
for an sm_90 GPU as far as Triton's GPU IR (`compile_front_end`, in a process without the interpreter).
The stages after that (LLVM IR, PTX, ptxas) cost seconds to a minute a kernel on a CPU (QR's update
kernel: 24 s of LLVM, 11 s of ptxas), so they are left to the GPU tests. Kernels that only a larger case
launches are not covered.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CAPABILITY = 90  # sm_90: the H100 and H200 that kbx's GPU figures come from
WARP_SIZE = 32
JSON_CONSTANTS = (bool, int, float, str, type(None))
DTYPE_KEY = "tl.dtype"  # a constexpr that is a Triton dtype, by name
UNCARRIED_KEY = "uncarried"  # a constexpr of another type, by repr: reported, not compiled


@contextlib.contextmanager
def recording() -> Iterator[list[dict]]:
    """Every launch the interpreter runs meanwhile, appended to the list yielded (see `_launch`)."""
    from triton.runtime.interpreter import InterpretedFunction

    launches: list[dict] = []
    interpreted_run = InterpretedFunction.run

    def recording_run(self, *args, grid, warmup, **kwargs):
        launches.append(_launch(self.fn, args, kwargs))
        return interpreted_run(self, *args, grid=grid, warmup=warmup, **kwargs)

    InterpretedFunction.run = recording_run
    try:
        yield launches
    finally:
        InterpretedFunction.run = interpreted_run


def capture(task_ids: list[str]) -> dict:
    """{"launches": [...], "skipped": {task: why}}: each task's expert run under the interpreter on its
    smallest correctness case that it runs without an error (some cases expect one) and that launches a
    kernel (an empty input may not), every launch recorded with the task's id."""
    import torch

    from kbx.tasks import discover
    from kbx.tasks.inputs import make_generator
    from kbx.tasks.registry import expert_entry

    tasks, launches, skipped = discover(), [], {}
    for task_id in task_ids:
        spec = tasks[task_id].spec
        entry = expert_entry(tasks[task_id])
        calls = sorted((spec.make_inputs(c.params, make_generator(0, "cpu"), "cpu") for c in spec.cases),
                       key=lambda c: sum(v.numel() for v in [*c.args, *c.kwargs.values()]
                                         if isinstance(v, torch.Tensor)))  # fmt: skip
        for call in calls:
            with recording() as launched:
                try:
                    entry(*call.args, **call.kwargs)
                except Exception as exc:  # an error case, or the interpreter's limits (bf16 arithmetic, libdevice)
                    skipped[task_id] = f"{type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0][:200]}"
                    continue
            if not launched:  # an empty input, say: nothing to compile yet
                skipped[task_id] = "no case launched a kernel"
                continue
            launches += [{"task": task_id, **launch} for launch in launched]
            skipped.pop(task_id, None)
            break
    return {"launches": launches, "skipped": skipped}


def _launch(fn, args: tuple, kwargs: dict) -> dict:
    """One launch as data: the kernel's file and name, each parameter's Triton type ("constexpr" for a
    constexpr), the constexprs' values and the launch options (num_warps...)."""
    from triton.runtime.jit import _normalize_ty, mangle_type

    params = inspect.signature(fn).parameters
    bound = dict(zip(params, args, strict=False))
    bound.update({k: v for k, v in kwargs.items() if k in params})
    signature, constexprs = {}, {}
    for name, p in params.items():
        value = bound.get(name, p.default)
        if p.annotation is not inspect.Parameter.empty and "constexpr" in _normalize_ty(p.annotation):
            signature[name] = "constexpr"
            constexprs[name] = _constant(value)
        else:
            signature[name] = mangle_type(value)
    options = {k: v for k, v in kwargs.items() if k not in params and isinstance(v, JSON_CONSTANTS)}
    return {"file": str(Path(fn.__code__.co_filename).resolve().relative_to(REPO)), "name": fn.__name__,
            "signature": signature, "constexprs": constexprs, "options": options}


def _constant(value):
    """A constexpr's value as JSON: a Triton dtype (an accumulator's, say) by its name."""
    import triton.language as tl

    if isinstance(value, tl.dtype):
        return {DTYPE_KEY: value.name}
    return value if isinstance(value, JSON_CONSTANTS) else {UNCARRIED_KEY: repr(value)}


def _value(constant):
    import triton.language as tl

    return tl.dtype(constant[DTYPE_KEY]) if isinstance(constant, dict) and DTYPE_KEY in constant else constant


def compile_front_end(launch: dict) -> str:
    """"" if the kernel compiles for sm_90 as far as Triton's GPU IR, else the error's first line."""
    from triton._C.libtriton import ir
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.compiler.compiler import make_backend
    from triton.runtime.jit import JITFunction

    uncarried = [k for k, v in launch["constexprs"].items() if isinstance(v, dict) and UNCARRIED_KEY in v]
    if uncarried:
        return f"constexprs this check cannot carry as data (teach _constant): {', '.join(uncarried)}"
    kernel = getattr(_module(launch["file"]), launch["name"])
    while not isinstance(kernel, JITFunction):  # autotune / heuristics wrappers
        kernel = kernel.fn
    target = GPUTarget("cuda", CAPABILITY, WARP_SIZE)
    backend = make_backend(target)
    options = backend.parse_options(launch["options"])
    context = ir.context()
    ir.load_dialects(context)
    backend.load_dialects(context)
    stages: dict = {}
    backend.add_stages(stages, options, ASTSource(kernel, {}).language)
    try:
        source = ASTSource(kernel, launch["signature"], {k: _value(v) for k, v in launch["constexprs"].items()})
        module = source.make_ir(target, options, backend.get_codegen_implementation(options),
                                backend.get_module_map(), context)  # fmt: skip
        metadata: dict = {}
        for stage in ("ttir", "ttgir"):
            module = stages[stage](module, metadata)
    except Exception as exc:
        lines = [line for line in str(exc).splitlines() if line.strip()]
        return f"{type(exc).__name__}: {' | '.join(lines[-3:])[:400]}"
    return ""


_MODULES: dict[str, object] = {}


def _module(file: str):
    """The module of a kernel's file: kbx's by import, a task's expert by path (as kbx loads it)."""
    if file not in _MODULES:
        path = REPO / file
        if path.parts[len(REPO.parts)] == "kbx":
            _MODULES[file] = importlib.import_module(".".join(Path(file).with_suffix("").parts))
        else:
            spec = importlib.util.spec_from_file_location(f"expert_{'_'.join(Path(file).parts[1:-1])}", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            _MODULES[file] = module
    return _MODULES[file]

