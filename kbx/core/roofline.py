"""Where a timed shape sits against the hardware's peaks: bandwidth and compute utilisation and
whether it is memory- or compute-bound (arithmetic intensity against the ridge point)."""

from __future__ import annotations

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
