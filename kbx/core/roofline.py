"""Where a timed shape sits against the hardware's peaks: bandwidth and compute utilisation, whether
it is memory- or compute-bound (arithmetic intensity against the ridge point), and the limits no
honest measurement passes (a shape beyond them is timing_suspect, kbx.contract.timing_policy)."""

from __future__ import annotations

import dataclasses
import math

from kbx.core.hardware import Hardware
from kbx.core.record import ShapeTiming

MEMORY_BOUND, COMPUTE_BOUND, UNKNOWN = "memory", "compute", "unknown"


def peak_tflops(hardware: Hardware, dtypes: list[str] | tuple[str, ...]) -> float:
    """The peak that applies: tensor-core bf16/fp16 peak for half types, fp32 otherwise."""
    if any(d in ("bfloat16", "float16") for d in dtypes):
        return hardware.peak_bf16_tflops
    return hardware.peak_fp32_tflops


def classify(shape: ShapeTiming, hardware: Hardware, dtypes) -> dict[str, float | str]:
    """Utilisation of bandwidth and compute, and the roofline class; 'unknown' without peaks."""
    peak = peak_tflops(hardware, dtypes)
    if not (hardware.peak_bw_gbs and peak):
        return {"bw_util": float("nan"), "compute_util": float("nan"), "roofline": UNKNOWN}
    ridge = peak * 1e12 / (hardware.peak_bw_gbs * 1e9)  # FLOP per byte where both limits meet
    intensity = shape.tflops * 1e12 / (shape.gbps * 1e9) if shape.gbps else 0.0
    return {
        "bw_util": shape.gbps / hardware.peak_bw_gbs,
        "compute_util": shape.tflops / peak,
        "roofline": COMPUTE_BOUND if intensity >= ridge else MEMORY_BOUND,
    }


# --- what the device can do at most: a shape measured beyond it is timing_suspect ------------------

# The margins over the profile's peaks that a measured shape may reach before it is flagged. Measured
# (docs/bench/results, 10,725 timed shapes: experts, torch.compile and the GEAK corpus, on H100 and H200,
# 2026-11-27 to 12-06): the highest honest bandwidth is 0.927 of the limit below with no margin
# (Normalization/normalized_cosine_similarity rows2^18 on an H200, 4,548 GB/s), 0.995 of the HBM peak
# alone (Index/expand_where 2048x2^15 on an H100, 3,334 GB/s: writes that the L2 still held when the
# kernel ended); the highest compute rate 0.975 of its tensor-core peak (MatrixMultiply/
# symmetric_mm_and_abs_sum square_8192 on an H200, fp32 as TF32: its FLOP model counts the full GEMM,
# its expert computes half). 10 % keeps every one of them at most 0.89 of its limit.
BANDWIDTH_MARGIN = 0.10
COMPUTE_MARGIN = 0.10
INT8_PER_BF16 = 2.0  # dense int8 tensor-core throughput over bf16's (Ampere, Hopper, Ada)
HALF_TYPES = ("float16", "bfloat16")
INT8_TYPES = ("int8", "uint8")
BYTES_PER_MB = 1e6  # l2_mb in the profiles is in (SI) megabytes, as the vendors state it


@dataclasses.dataclass(frozen=True)
class Limit:
    """The most a shape can measure on a device, and what that figure is made of (for the reason)."""

    value: float  # GB/s or TFLOP/s; NaN without the profile's peak
    basis: str


def bandwidth_limit(hardware: Hardware, kernel_ms: float, margin: float = BANDWIDTH_MARGIN) -> Limit:
    """The most GB/s (of the task's byte model) a call of `kernel_ms` can show: the HBM peak plus the
    margin, plus the whole L2 over the call's time. The L2 is write-back, so up to its size of
    results may still be in it when the kernel ends and reach memory after the timing (a write-heavy
    shape's figure can pass the HBM peak so); reads cannot come from it, as the timing flushes it
    before every repetition. One yardstick for reads and writes alike: the HBM peak is what neither
    direction nor their mix can pass, where the measured copy bandwidth (reads plus writes) can."""
    if not (hardware.peak_bw_gbs and kernel_ms > 0):
        return Limit(math.nan, "")
    l2_gbps = hardware.l2_mb * BYTES_PER_MB / (kernel_ms * 1e-3) / 1e9
    value = hardware.peak_bw_gbs * (1 + margin) + l2_gbps
    return Limit(value, f"HBM peak {hardware.peak_bw_gbs:,.0f} GB/s + {margin:.0%}, and its "
                        f"{hardware.l2_mb:g} MB L2 over {kernel_ms:.4g} ms")  # fmt: skip


def compute_limit(hardware: Hardware, dtypes, margin: float = COMPUTE_MARGIN) -> Limit:
    """The most TFLOP/s (of the task's FLOP model) a shape with inputs of `dtypes` can show: the
    fastest unit those types may use, plus the margin. Triton's tl.dot runs fp32 on TF32 tensor
    cores by default (the tolerances allow it), so any type counts at least at the TF32 peak."""
    peak, dtype = max((_peak(hardware, d), d) for d in (dtypes or ("float32",)))
    if not peak:
        return Limit(math.nan, "")
    return Limit(peak * (1 + margin), f"{dtype} peak {peak:,.1f} TFLOP/s + {margin:.0%}")


def _peak(hardware: Hardware, dtype: str) -> float:
    if dtype in HALF_TYPES:
        return hardware.peak_bf16_tflops
    if dtype in INT8_TYPES:
        return INT8_PER_BF16 * hardware.peak_bf16_tflops
    return max(hardware.peak_tf32_tflops, hardware.peak_fp32_tflops)


def beyond_the_device(shape: str, gbps: float, tflops: float, bandwidth: Limit, compute: Limit, device: str) -> str:
    """Why a shape's measured rates are more than `device` can do (naming figure, limit and what the
    limit is made of), "" if they are not."""
    reasons = []
    if gbps > bandwidth.value:
        reasons.append(f"{gbps:,.0f} GB/s exceeds the {device}'s {bandwidth.value:,.0f} GB/s ({bandwidth.basis})")
    if tflops > compute.value:
        reasons.append(f"{tflops:,.1f} TFLOP/s exceeds the {device}'s {compute.value:,.1f} TFLOP/s ({compute.basis})")
    return f"shape {shape}: " + " and ".join(reasons) if reasons else ""
