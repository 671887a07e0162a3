"""Running one case of a candidate inside its worker, and the ghost replay.

Outputs are normalised to picklable plain data for `torch.save(..., weights_only` loading):
tensors (moved to CPU), numbers, strings, None, lists, tuples and dicts. An exception raised by the
candidate becomes {"__exception__": type name} so exceptions compare by type, not message.
"""

from __future__ import annotations

import contextlib
import sys
import traceback
import warnings

import torch

from kbx.contract.compare import EXCEPTION_KEY
from kbx.core.record import MESSAGE_CHARS, truncate

GHOST_KEY = "output"
INDUCTOR_CONFIG = "torch._inductor.config"  # the module torch.use_deterministic_algorithms imports


def run_case(entry, call, case_name: str, seed: int, inplace: bool, counter, device: str) -> dict:
    """Call the entry once on fresh clones of the case's inputs; report output and side effects."""
    args, kwargs = clone_tree(call.args), clone_tree(dict(call.kwargs))
    before = counter.launches
    result = {"case": case_name, "seed": seed, "output": None, "error": None, "mutated": "", "launches": 0,
              "wrong_type": ""}  # fmt: skip
    try:
        out = entry(*args, **kwargs)
        _sync(device)
    except BaseException as exc:  # the candidate may raise anything, SystemExit included
        result["error"] = {
            "type": type(exc).__name__,
            "message": truncate("".join(traceback.format_exception(type(exc), exc, exc.__traceback__, limit=-8)),
                                MESSAGE_CHARS),
            "oom": is_out_of_memory(exc),
        }  # fmt: skip
        result["output"] = {EXCEPTION_KEY: type(exc).__name__}
        result["launches"] = counter.launches - before
        return result
    result["launches"] = counter.launches - before
    if inplace:
        out = with_state(out, args, kwargs)
    result["wrong_type"] = find_foreign_type(out)
    result["output"] = to_plain(out) if not result["wrong_type"] else None
    if not inplace:
        result["mutated"] = first_mutation(call.args, call.kwargs, args, kwargs)
    return result


# torch's CPU allocator reports exhaustion (e.g. under the worker's RLIMIT_AS) as a plain RuntimeError.
CPU_OOM_MESSAGES = ("DefaultCPUAllocator: can't allocate memory", "not enough memory")


def is_out_of_memory(exc: BaseException) -> bool:
    if isinstance(exc, (torch.OutOfMemoryError, MemoryError)):
        return True
    return isinstance(exc, RuntimeError) and any(m in str(exc) for m in CPU_OOM_MESSAGES)


def ghost_replay(entry, calls, results, ghost_calls, counter, device: str, inplace: bool) -> dict:
    """Run a case on fresh inputs (an unused seed) with every Triton launch turned into a no-op.

    `ghost_calls` maps case name -> (seed, call), built before the candidate was imported. The
    judge compares the output with the reference for those inputs: if it is still right, the work
    was done without Triton and the kernel was a decoy. Fresh inputs matter: memory freed by the
    normal runs may still hold their correct results, never results for inputs not yet seen.
    Returns {"case", "seed", "output"}, or {} when no random case ran cleanly with launches.
    """
    ran = [(r, c) for r, c in zip(results, calls, strict=False)
           if not r["error"] and r["launches"] > 0 and c[0].name in ghost_calls]  # fmt: skip
    if not ran:
        return {}
    result, (case, _, _) = max(ran, key=lambda rc: _numel(rc[0]["output"]))
    seed, call = ghost_calls[case.name]
    from kbx.sandbox.instrument import poison_cuda_allocator, poison_like

    poison_cuda_allocator(device)
    poison_like(result["output"], device)  # sizes only: the saved output stays on the CPU
    args, kwargs = clone_tree(call.args), clone_tree(dict(call.kwargs))
    counter.ghost = True
    try:
        with empty_tensors_filled() if device == "cpu" else contextlib.nullcontext():
            out = entry(*args, **kwargs)
            out = to_plain(with_state(out, args, kwargs) if inplace else out)
            _sync(device)
    except BaseException as exc:  # a kernel-free run may well fail; then it was no decoy
        out = {EXCEPTION_KEY: type(exc).__name__}
    finally:
        counter.ghost = False
    return {"case": case.name, "seed": seed, GHOST_KEY: out}


@contextlib.contextmanager
def empty_tensors_filled():
    """Every tensor made without values (torch.empty and its kin) filled with NaN (an integer's largest
    value), through torch's deterministic mode (warnings only, never an error), so that an output a
    no-op launch left unwritten can never hold a stale value that happens to pass. Poisoning the freed
    blocks beforehand does not reach the CPU's allocator: the honest expert of
    MatrixMultiply/matrix_multiply_and_row_dot, whose 0-d result is judged within a band as wide as its
    terms' size, was called a decoy in 1 of 12 CPU attempts (2026-11-29, docs/BENCHMARKS.md).

    On the CPU only: the deterministic flag is state that torch.compile guards on, so a compiled entry
    is compiled again for the replay instead of replayed, and 62 of 184 torch.compile entries
    (method=inductor, H200, 2026-12-01) were called decoys. On a GPU, poisoning the freed blocks
    (kbx.sandbox.instrument) reaches every block an output can get."""
    deterministic = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    fill = torch.utils.deterministic.fill_uninitialized_memory
    _set_deterministic(True, warn_only=True)
    torch.utils.deterministic.fill_uninitialized_memory = True
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the ops without a deterministic kernel say so, once each
            yield
    finally:
        _set_deterministic(deterministic, warn_only=warn_only)
        torch.utils.deterministic.fill_uninitialized_memory = fill


def _set_deterministic(mode: bool, warn_only: bool) -> None:
    """torch.use_deterministic_algorithms, without importing Inductor where nothing compiled has.

    The public call also sets Inductor's `deterministic` config, importing Inductor and Dynamo to do
    so: 1.1 s of a 2.5 s CPU attempt (Activation/leaky_relu's expert, 2026-12-07). Only compiled code
    reads that config, so where this process has not imported it, the flag alone (the one eager ops
    and torch.compile's guards read) is set; where it has, the public call does both."""
    if INDUCTOR_CONFIG in sys.modules or not hasattr(torch._C, "_set_deterministic_algorithms"):
        torch.use_deterministic_algorithms(mode, warn_only=warn_only)
    else:
        torch._C._set_deterministic_algorithms(mode, warn_only=warn_only)


def with_state(out, args, kwargs) -> tuple:
    """For in-place ops the result is the return value plus every tensor input after the call
    (parameters, buffers, running statistics), so the update itself is judged, not just the return."""
    state = [v for v in [*args, *kwargs.values()] if isinstance(v, torch.Tensor)]
    return (out, state)


def clone_tree(value):
    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, (list, tuple)):
        return type(value)(clone_tree(v) for v in value)
    if isinstance(value, dict):
        return {k: clone_tree(v) for k, v in value.items()}
    return value


def to_plain(value, device: str = "cpu", _copies: dict | None = None):
    """Detached contiguous plain-tensor copies on `device`; list/tuple/dict containers kept.

    Always a copy, never a view of the candidate's tensor: the output is what the entry returned,
    not what a thread or a later call writes into that buffer before the outputs are saved. A
    tensor that appears twice (an in-place op returns its input, and `with_state` lists the input
    again) is copied once and both leaves hold that copy, so it is saved and loaded once: for
    Optimizer/SGD's perf shapes 4.2 GB instead of 7.0 GB.
    """
    copies = {} if _copies is None else _copies
    if isinstance(value, torch.Tensor):
        key = _same_values_key(value)
        if key is None or key not in copies:
            copy = value.detach().to(device, memory_format=torch.contiguous_format, copy=True).as_subclass(torch.Tensor)
            if key is None:
                return copy
            copies[key] = copy
        return copies[key]
    if isinstance(value, (list, tuple)):
        items = [to_plain(v, device, copies) for v in value]
        return tuple(items) if isinstance(value, tuple) else items
    if isinstance(value, dict):
        return {str(k): to_plain(v, device, copies) for k, v in value.items()}
    if value is None or isinstance(value, (bool, int, float, complex, str)):
        return value
    return repr(value)


def _same_values_key(t: torch.Tensor) -> tuple | None:
    """Tensors with equal keys read the same memory the same way (hence hold the same values);
    None where a tensor has no plain strided memory to compare (sparse, nested, meta)."""
    if t.layout is not torch.strided or t.is_nested or t.device.type == "meta":
        return None
    return (t.device, t.dtype, t.data_ptr(), tuple(t.shape), t.stride())


def find_foreign_type(value) -> str:
    """Name of the first output leaf that is a tensor subclass (lazy/deferred results), else ''."""
    if isinstance(value, torch.Tensor):
        return "" if type(value) is torch.Tensor or type(value) is torch.nn.Parameter else type(value).__name__
    if isinstance(value, (list, tuple)):
        return next((n for n in map(find_foreign_type, value) if n), "")
    if isinstance(value, dict):
        return next((n for n in map(find_foreign_type, value.values()) if n), "")
    return ""


def first_mutation(orig_args, orig_kwargs, args, kwargs) -> str:
    """Name of the first tensor input the candidate changed, else ''.

    `orig_*` are the pristine inputs (never handed out); `args`/`kwargs` the clones it received.
    """
    pairs = [(f"argument {i}", a, b) for i, (a, b) in enumerate(zip(orig_args, args, strict=False))]
    pairs += [(f"argument {k!r}", orig_kwargs[k], kwargs.get(k)) for k in orig_kwargs]
    for name, a, b in pairs:
        if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and not bitwise_equal(a, b):
            return name
    return ""


def bitwise_equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.is_floating_point() or a.is_complex():
        return bool(torch.equal(torch.nan_to_num(a.detach()), torch.nan_to_num(b.detach()))) and bool(
            torch.equal(torch.isnan(a), torch.isnan(b))
        )
    return bool(torch.equal(a, b))


def _numel(value) -> int:
    if isinstance(value, torch.Tensor):
        return value.numel()
    if isinstance(value, (list, tuple)):
        return sum(_numel(v) for v in value)
    if isinstance(value, dict):
        return sum(_numel(v) for v in value.values())
    return 0


def _sync(device: str) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()
