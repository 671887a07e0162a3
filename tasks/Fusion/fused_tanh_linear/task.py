"""Fusion/fused_tanh_linear: tanh(input @ weight^T + bias), fp32 or fp16.

Tolerance: TF32-level error on fp32 (matmul_tolerance); fp16 keeps the default two-ulp rule (tanh
flattens the effect of the reference's fp16 rounding of the linear output). Upstream's fixed cases
drew fp32 inputs with torch.randn; here they are seeded draws of the same shapes.
"""

import torch
import torch.nn.functional as F

from kbx.tasks import OUTLIER, PERF, STANDARD, Call, Case, Task, matmul_tolerance
from kbx.tasks.inputs import rand_tensor


def reference(input, weight, bias=None):
    return torch.tanh(F.linear(input, weight, bias))


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
    tolerance=matmul_tolerance(),
    notes="TF32-level tolerance on fp32; fixed randn cases seeded; adds an fp32 random case.",
)
