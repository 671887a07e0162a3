"""Fusion/fused_tanh_linear: tanh(input @ weight^T + bias), fp32 or fp16.

Tolerance: fp16 keeps the default two-ulp rule (tanh flattens the effect of the reference's fp16
rounding of the linear output). Upstream's fixed cases drew fp32 inputs with torch.randn; here they
are seeded draws of the same shapes.

Version 2, fp32 rule (`tf32_through_tanh`): the TF32 allowance belongs to the matrix product, so it is
applied to the pre-activation z = input @ weight^T + bias and carried through tanh. Version 1 scaled
matmul_tolerance's rms term by the output's rms, but tanh squashes that to about 1 while z's rms is
sqrt(K) (64 to 128 at the perf shapes), and near z = 0, where tanh's slope is 1, z's TF32 error
passes to the output unchanged: honest TF32 kernels failed (the expert on the H100: 7 of 16384
elements at K = 128, error 0.0127 against an allowance of 0.0094; simulated TF32 at K = 4096: about
3500 of 524288). An fp32 output now passes where it lies in tanh([z - d, z + d]), z computed in fp64
and d = TF32_RMS_ATOL * rms(z), widened by the default fp32 atol and rtol: what a plain matrix
product may be off by, seen through tanh (generous near z = 0, tight where tanh saturates).
"""

import torch
import torch.nn.functional as F

from kbx.tasks import OUTLIER, PERF, STANDARD, Call, Case, Task, Tolerance
from kbx.tasks.inputs import rand_tensor
from kbx.tasks.spec import TF32_RMS_ATOL

TOLERANCE = Tolerance()


def reference(input, weight, bias=None):
    return torch.tanh(F.linear(input, weight, bias))


def tf32_through_tanh(call: Call, got) -> str | None:
    """For fp32: '' when each output lies within tanh of the pre-activation's TF32 interval (module
    docstring), else a reason. fp16 outputs (None) are compared elementwise as usual."""
    if got.dtype != torch.float32:
        return None
    x, w, b = call.args
    z = F.linear(x.double(), w.double(), b.double() if b is not None else None)
    d = TF32_RMS_ATOL * float(z.square().mean().sqrt()) if z.numel() else 0.0
    atol, rtol, _ = TOLERANCE.for_dtype("float32")
    lo, hi, g = torch.tanh(z - d), torch.tanh(z + d), got.double()
    ok = (g >= lo - atol - rtol * lo.abs()) & (g <= hi + atol + rtol * hi.abs())  # NaN fails both
    if bool(ok.all()):
        return ""
    err = (g - torch.tanh(z)).abs().nan_to_num(float("inf"))[~ok]
    return (f"{int((~ok).sum())} of {ok.numel()} fp32 elements lie outside tanh of the TF32 interval of the "
            f"pre-activation (largest error {float(err.max()):.3g})")  # fmt: skip


def make_inputs(params, gen, device) -> Call:
    (m, k), n = params["shape"], params["out"]
    dt, mode = params.get("dtype", "float32"), params["mode"]
    x = rand_tensor((m, k), dt, mode, gen, device)
    w = rand_tensor((n, k), dt, mode, gen, device)
    b = rand_tensor((n,), dt, "standard", gen, device) if params.get("bias", True) else None
    return Call((x, w, b))


def _flops(input, weight, bias=None):
    m, n = input.numel() // input.shape[-1], weight.shape[0]
    return float(2 * m * input.shape[-1] * n + 2 * m * n)


def _bytes(input, weight, bias=None):
    m, n = input.numel() // input.shape[-1], weight.shape[0]
    nb = bias.numel() if bias is not None else 0
    return float((input.numel() + weight.numel() + nb + m * n) * input.element_size())


TASK = Task(
    entry="fused_tanh_linear",
    dtypes=("float32", "float16"),
    signature=(
        "fused_tanh_linear(input: torch.Tensor, weight: torch.Tensor, "
        "bias: torch.Tensor | None = None) -> torch.Tensor"
    ),
    description=(
        "Return tanh(input @ weight^T + bias) for input (M, K), weight (N, K) and optional bias (N,), all of one "
        "dtype (fp32 or fp16; accumulate in fp32), as a new (M, N) tensor of that dtype."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("small_bias", STANDARD, {"shape": (5, 3), "out": 4, "mode": "standard"}),
        Case("small_no_bias", STANDARD, {"shape": (5, 3), "out": 4, "mode": "standard", "bias": False}),
        Case("small_2x3", STANDARD, {"shape": (2, 3), "out": 2, "mode": "standard"}),
        Case("small_3x2", STANDARD, {"shape": (3, 2), "out": 2, "mode": "standard"}),
        Case("standard_fp16", STANDARD, {"shape": (64, 128), "out": 256, "dtype": "float16", "mode": "standard"}),
        Case("outlier_fp16", OUTLIER, {"shape": (64, 128), "out": 256, "dtype": "float16", "mode": "outlier"}),
        Case("standard_fp32", STANDARD, {"shape": (64, 128), "out": 256, "mode": "standard"}),
    ],
    perf=[
        Case(f"i{i}", PERF, {"shape": (2 ** (i - 3), 2**i), "out": 2 ** (i - 2), "mode": "standard"})
        for i in (12, 13, 14)
    ],
    flops=_flops,
    bytes=_bytes,
    tolerance=TOLERANCE,
    stochastic=tf32_through_tanh,
    version=2,
    notes=(
        "fp32: TF32 allowance on the pre-activation carried through tanh (tf32_through_tanh); fixed randn cases "
        "seeded; adds an fp32 random case."
    ),
)
