"""Prompts for generation methods, built from the task's own description and signature.

Variants (`prompt` config group) switch sections on: a worked Triton example, the hardware's
peaks, and the task's math. kbx tasks carry no separate math text, so the math section shows the
PyTorch reference itself (the exact definition the judge compares against), not a paraphrase.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import textwrap

from kbx.core.hardware import Hardware
from kbx.core.record import EvalRecord, Status
from kbx.llm.profile import CompileTimes, profile_lines
from kbx.tasks.spec import TaskInfo

SYSTEM = ("You are an expert in writing high-performance GPU kernels in Triton. You write correct, "
          "self-contained Python modules and answer with code in one fenced python block.")  # fmt: skip
ERROR_CHARS = 2000  # error text fed back is cut to this many characters (tail kept)
_JOB_PATH = re.compile(r"\S*/jobs/[0-9a-f]+/")  # a worker's per-attempt directory
_ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}")
_SEED = re.compile(r"seed (\d+)")

EXAMPLE_TASK = """\
Entry: scaled_relu(x: torch.Tensor, scale: float = 1.0) -> torch.Tensor
Description: Return max(x, 0) * scale elementwise as a new tensor of x's dtype and shape."""

EXAMPLE_ANSWER = '''\
```python
import torch
import triton
import triton.language as tl


@triton.jit
def _scaled_relu_kernel(x_ptr, out_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    y = tl.maximum(x, 0.0) * scale
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


def scaled_relu(x, scale=1.0):
    x = x.contiguous()
    out = torch.empty_like(x)
    n = x.numel()
    if n:
        BLOCK = 1024
        _scaled_relu_kernel[(triton.cdiv(n, BLOCK),)](x, out, n, float(scale), BLOCK=BLOCK)
    return out
```'''


@dataclasses.dataclass(frozen=True)
class PromptSettings:
    name: str = "base"
    example: bool = False  # a worked Triton example (task -> answer)
    hardware: bool = False  # the target's peaks
    math: bool = False  # the PyTorch reference that defines the task
    # torch.compile's times per task and perf shape on this GPU, for the P feedback (kbx.llm.profile)
    compile_times: CompileTimes = dataclasses.field(default_factory=dict)


def task_feedback(task: TaskInfo, record: EvalRecord | None, level: str, prompt: PromptSettings, hardware: Hardware,
                  public_seeds: tuple[int, ...] = (0,)) -> str:  # fmt: skip
    """`feedback` for a kernel of `task`, with its per-shape profile at level P (the GPU's peaks, the task's
    dtypes, torch.compile's times where `prompt` knows them)."""
    profile = None
    if level == "P" and record is not None:
        compiled = prompt.compile_times.get((task.id, task.spec.version), {})
        profile = profile_lines(record, hardware, list(task.spec.dtypes), compiled)
    return feedback(record, level, public_seeds, profile)


def task_messages(task: TaskInfo, prompt: PromptSettings, hardware: Hardware) -> list[dict]:
    """The round-0 (one-shot) conversation: system message and the task."""
    spec = task.spec
    parts = [
        "Write a Triton implementation of the function below. Replace the PyTorch computation with "
        "Triton kernels (the Python wrapper may only check arguments, allocate outputs and launch kernels). "
        "Keep the exact signature and semantics, including edge cases the description names.",
    ]
    if prompt.example:
        parts.append(f"Here is a worked example.\n\nExample task:\n{EXAMPLE_TASK}\n\nExample answer:\n{EXAMPLE_ANSWER}")
    parts.append(f"Task {task.id}.\nEntry: {spec.signature}\nDescription: {spec.description}\n"
                 f"Input/output dtypes used: {', '.join(spec.dtypes)}")  # fmt: skip
    if prompt.math:
        parts.append(f"The reference the result is compared against (PyTorch):\n```python\n{reference_source(task)}```")
    if prompt.hardware:
        parts.append(hardware_section(hardware))
    parts.append(f"Answer with one fenced python block holding a complete module that imports torch, triton and "
                 f"triton.language and defines `{spec.entry}` at top level.")  # fmt: skip
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "\n\n".join(parts)}]


def reference_source(task: TaskInfo) -> str:
    try:
        return textwrap.dedent(inspect.getsource(task.spec.reference))
    except (OSError, TypeError):
        return f"# source unavailable; see the description of {task.spec.entry}\n"


def hardware_section(hw: Hardware) -> str:
    if hw.kind != "cuda":
        return ("Target: CPU, Triton's interpreter (TRITON_INTERPRET=1). Only correctness is judged; "
                "write kernels that would also be fast on a GPU.")  # fmt: skip
    return (f"Target GPU: {hw.gpu_name or hw.name}. Peaks: DRAM bandwidth {hw.peak_bw_gbs:g} GB/s, "
            f"FP32 {hw.peak_fp32_tflops:g} TFLOP/s, TF32 {hw.peak_tf32_tflops:g} TFLOP/s, "
            f"BF16 {hw.peak_bf16_tflops:g} TFLOP/s, L2 {hw.l2_mb:g} MB. Aim for the bound that limits this task.")  # fmt: skip


def stable(text: str, public_seeds: tuple[int, ...]) -> str:
    """Evaluator text with what differs between identical runs removed (worker paths, addresses,
    the per-run secret seed), so the same kernel gets the same feedback and replay stays bit-identical."""
    known = {0, *public_seeds}  # fixed cases run with seed 0
    text = _ADDRESS.sub("0x…", _JOB_PATH.sub("", text))
    return _SEED.sub(lambda m: m.group(0) if int(m.group(1)) in known else "seed <secret>", text)


def feedback(record: EvalRecord | None, level: str, public_seeds: tuple[int, ...] = (0,),
             profile: list[str] | None = None) -> str:  # fmt: skip
    """The evaluation block for one previous kernel (KernelBench levels G, E, P). P adds `profile`, what kbx
    measured per perf shape (kbx.llm.profile.profile_lines; `task_feedback` renders it for a task).

    A mismatch on the per-run secret seed is reported without its values: they differ from run to
    run and would make the prompt (and a replay) irreproducible.
    """
    if record is not None and record.status is Status.TRUNCATED:  # no verdict to report, at any level
        return ("Your previous answer was cut off at the length limit before its code was complete, so it was not "
                "run. Answer with a shorter complete module in one fenced python block: less prose, no draft before "
                "the final version.")  # fmt: skip
    if level == "G" or record is None:
        return "Improve this kernel: make it correct if it is not, otherwise faster."
    lines = [f"Evaluation: status {record.status.value}; compiled {record.compiled}; correct {record.correct}"
             f" ({record.cases_passed}/{record.cases_total} cases passed)."]  # fmt: skip
    if not record.correct:
        if record.reason:
            lines.append(f"Reason: {stable(record.reason, public_seeds)}")
        if record.message:
            lines.append("Error output (tail):\n```\n" + stable(record.message[-ERROR_CHARS:].strip(), public_seeds)
                         + "\n```")  # fmt: skip
        m = record.mismatch
        if m.count and m.seed not in {0, *public_seeds}:
            lines.append(f"Output mismatch in case {m.case} on a hidden random input (secret seed); values withheld.")
        elif m.count:
            lines.append(f"Output mismatch in case {m.case} (seed {m.seed}) {m.leaf}: {m.count} of {m.numel} "
                         f"elements differ; max abs error {m.max_abs_err:.3g}, max rel error {m.max_rel_err:.3g}; "
                         f"first indices {list(m.indices)[:5]}, got {list(m.got)[:5]}, expected {list(m.expected)[:5]}.")  # fmt: skip
    elif record.timed:
        lines.append(f"Runtime {record.runtime_ms:.4g} ms vs reference {record.baseline_ms:.4g} ms "
                     f"(speedup {record.speedup:.3g}x, geometric mean over perf shapes).")  # fmt: skip
    else:
        lines.append(f"Not timed: {record.timing_skipped_reason or 'no timing available'}.")
    if level == "P":
        lines += profile if profile is not None else [f"No per-shape profile: {record.timing_skipped_reason or 'none'}."]
    lines.append("Fix correctness if the kernel is wrong, otherwise make it faster. "
                 "Answer with the complete module in one fenced python block.")  # fmt: skip
    return "\n".join(lines)
