"""How long an attempt may take: one base knob per stage, scaled for the device it runs on.

The bases are sized for a GPU, where importing, compiling and checking an honest kernel of the
suite takes seconds; under the Triton CPU interpreter the same work is several times slower, so
the base is multiplied by `INTERPRETER_TIMEOUT_FACTOR` there. A hung candidate thus costs tens of
seconds of a GPU, not minutes.
"""

from __future__ import annotations

DEFAULT_CHECK_TIMEOUT_S = 60.0  # import + correctness cases of one attempt, on a GPU
DEFAULT_TIME_TIMEOUT_S = 120.0  # timing every perf shape of one attempt (GPU only)
INTERPRETER_TIMEOUT_FACTOR = 5.0  # the Triton CPU interpreter's slowdown allowance


def scaled_timeout_s(base_s: float, device: str, interpreter_factor: float = INTERPRETER_TIMEOUT_FACTOR) -> float:
    """The timeout for `device` ("cuda" or "cpu") from a GPU-sized base."""
    return float(base_s) if device == "cuda" else float(base_s) * float(interpreter_factor)
