"""Fusion/fused_softplus_linear: a thresholded softplus of input @ weight^T + bias.

As upstream: the threshold is compared with z itself (not beta * z as in torch's softplus), and
softplus is the plain (1 / beta) * log(1 + exp(beta * z)). kbx departure: the fp32 comparison allows
TF32-level error (matmul_tolerance).
"""

import torch
import torch.nn.functional as F

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task, matmul_tolerance
from kbx.tasks.inputs import literal, rand_tensor


def reference(input, weight, bias=None, beta=1, threshold=20):
    z = F.linear(input, weight, bias)
    soft = (1.0 / beta) * torch.log(1.0 + torch.exp(beta * z))
    return torch.where(z > threshold, z, soft)


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], "float32", device)
        w = torch.full((2, 2), 0.5, dtype=torch.float32, device=device)
        b = torch.zeros(2, dtype=torch.float32, device=device) if params.get("bias", True) else None
    else:
        (m, k), n = params["shape"], params["out"]
        mode = params["mode"]
        x = rand_tensor((m, k), "float32", mode, gen, device)
        w = rand_tensor((n, k), "float32", mode, gen, device)
        b = rand_tensor((n,), "float32", "standard", gen, device)
    return Call((x, w, b), {k: params[k] for k in ("beta", "threshold") if k in params})


def _flops(input, weight, bias=None, beta=1, threshold=20):
    m, n = input.numel() // input.shape[-1], weight.shape[0]
    return float(2 * m * input.shape[-1] * n + 7 * m * n)


def _bytes(input, weight, bias=None, beta=1, threshold=20):
    m, n = input.numel() // input.shape[-1], weight.shape[0]
    nb = bias.numel() if bias is not None else 0
    return float((input.numel() + weight.numel() + nb + m * n) * input.element_size())


_X = [[1.0, 2.0], [3.0, 4.0]]

TASK = Task(
    entry="fused_softplus_linear",
    dtypes=("float32",),
    signature=(
        "fused_softplus_linear(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None, "
        "beta: float = 1, threshold: float = 20) -> torch.Tensor"
    ),
    description=(
        "Compute z = input @ weight^T + bias for fp32 input (M, K), weight (N, K), optional bias (N,). Return a "
        "new (M, N) fp32 tensor holding z where z > threshold (z itself is compared, not beta * z), and "
        "(1 / beta) * log(1 + exp(beta * z)) elsewhere."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_default", FIXED, {"values": _X}),
        Case("fixed_beta2", FIXED, {"values": _X, "beta": 2.0}),
        Case("fixed_threshold15", FIXED, {"values": [[10.0, 20.0], [30.0, 40.0]], "threshold": 15.0}),
        Case("fixed_no_bias", FIXED, {"values": _X, "bias": False}),
        Case("standard", STANDARD, {"shape": (64, 128), "out": 256, "mode": "standard"}),
        Case("standard_beta2_t5", STANDARD, {"shape": (64, 128), "out": 256, "mode": "standard", "beta": 2.0,
                                             "threshold": 5.0}),  # fmt: skip
        Case("outlier", OUTLIER, {"shape": (64, 128), "out": 256, "mode": "outlier"}),
    ],
    perf=[Case(f"B1_k{k}", PERF, {"shape": (1, k), "out": k, "mode": "standard"}) for k in (8192, 11584, 16384)],
    flops=_flops,
    bytes=_bytes,
    version=3,  # tolerance widened by the GPU tolerance audit (v2), then for the TF32 tail of the outlier case (v3)
    # v2: the audit on an H100 (2026-11-27) saw cuBLAS's TF32 product reach 0.59x of the 1x allowance on
    # one element of the outlier case (HEADROOM needs <= 0.5). v3: over 400 outlier seeds
    # (kbx.quality audit --tail) TF32 reached 1.06x the x2 allowance, and an H200 run failed one such seed
    # (2026-11-27); x5 leaves 2x headroom
    tolerance=matmul_tolerance(5),
    notes="TF32-level tolerance on the linear layer.",
)
