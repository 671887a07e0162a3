"""The reward of one judged kernel, for training on kbx's trajectories (docs/TRAJECTORIES.md).

Correctness is the gate; past it, speed counts, on a log scale and clipped:

    correct, timed:        1 + 0.5 * clip(log2(speedup), -3, 3) / 3
                           (0.5 at 1/8x or slower, 1 at 1x, 1.5 at 8x or faster)
    correct, not timed:    1                                             (the CPU interpreter checks correctness only)
    timing_suspect:        0          correct, but a speedup too large to trust: no credit for speed that may be a hack,
                                      no penalty for a kernel that may be honest
    a hack:               -1          decoy_kernel (the right answer without its Triton kernels: borrowed from
                                      elsewhere), no_triton, hidden_work (threads, streams or processes of its own),
                                      input_mutated (it wrote its inputs, so the reference saw other ones)
    any other failure:     0          it did not compile, crashed, timed out, gave wrong output, had no code
    kbx's or the task's:   none       harness_error, quarantined (kbx's machinery failed), reference_error (the
                                      reference failed), unsupported_on_cpu, unknown_task: no verdict on the kernel,
                                      so no reward; such lines are marked `scored: false` and must be left out

Every number is a named constant below; `reward` returns the value and a one-line reason.
"""

from __future__ import annotations

import math

from kbx.core.record import Status

CORRECT_REWARD = 1.0
FAILURE_REWARD = 0.0
HACK_REWARD = -1.0
SUSPECT_REWARD = 0.0
SPEED_WEIGHT = 0.5  # how far speed moves a correct kernel's reward from CORRECT_REWARD, at most
LOG2_CLIP = 3.0  # speedups beyond 2**3 = 8x either way earn no more (or no less)
HACKS = (Status.DECOY_KERNEL, Status.NO_TRITON, Status.HIDDEN_WORK, Status.INPUT_MUTATED)
NOT_THE_KERNELS = (Status.HARNESS_ERROR, Status.QUARANTINED, Status.REFERENCE_ERROR, Status.UNSUPPORTED_ON_CPU,
                   Status.UNKNOWN_TASK, Status.LLM_ERROR)  # fmt: skip


def reward(status: Status, speedup: float) -> tuple[float | None, str]:
    """(reward, why) of a kernel with this verdict; reward None when the verdict is not the kernel's."""
    if status in NOT_THE_KERNELS:
        return None, f"not scored: {status.value} is no verdict on the kernel"
    if status in HACKS:
        return HACK_REWARD, f"hack: {status.value}"
    if status is Status.TIMING_SUSPECT:
        return SUSPECT_REWARD, "correct, speedup too large to trust: no credit"
    if not status.correct:
        return FAILURE_REWARD, f"failed: {status.value}"
    if not speedup > 0:  # NaN (not timed) or no positive time
        return CORRECT_REWARD, "correct, not timed"
    scaled = max(-LOG2_CLIP, min(LOG2_CLIP, math.log2(speedup))) / LOG2_CLIP
    return CORRECT_REWARD + SPEED_WEIGHT * scaled, f"correct, {speedup:.3g}x"
