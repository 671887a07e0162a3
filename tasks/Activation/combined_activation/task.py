"""Activation/combined_activation: a 2-D matrix product followed by tanh(sigmoid(.)), a scale and a shift, in fp32.

kbx adds an `out=` case (judged after the call) and a case with 1-D weight2/bias as in upstream's perf shapes;
upstream's four fixed randn cases are seeded standard cases here. The tolerance allows TF32 in the product.
"""

import torch

from kbx.tasks import OUTLIER, PERF, STANDARD, Call, Case, Task, matmul_tolerance
from kbx.tasks.inputs import rand_tensor


def reference(input, weight1, weight2, bias, *, out=None):
    z = torch.mm(input, weight1)
    y = torch.tanh(torch.sigmoid(z)) * weight2 + bias
    if out is not None:
        out.copy_(y)
        return out
    return y


def make_inputs(params, gen, device) -> Call:
    m, k, n = params["mkn"]
    mode = params["mode"]
    scale = params.get("outlier_scale", 10.0)
    x = rand_tensor((m, k), "float32", mode, gen, device, outlier_scale=scale)
    w1 = rand_tensor((k, n), "float32", mode, gen, device, outlier_scale=scale)
    ew = (n,) if params.get("vec") else (m, n)
    w2 = rand_tensor(ew, "float32", mode, gen, device, outlier_scale=scale)
    b = rand_tensor(ew, "float32", mode, gen, device, outlier_scale=scale)
    kwargs = {"out": torch.zeros((m, n), device=device)} if params.get("out") else {}
    return Call((x, w1, w2, b), kwargs)


def _flops(input, weight1, weight2, bias, *, out=None):
    m, k = input.shape
    n = weight1.shape[1]
    return 2.0 * m * k * n + 10.0 * m * n


def _bytes(input, weight1, weight2, bias, *, out=None):
    m, n = input.shape[0], weight1.shape[1]
    total = input.numel() + weight1.numel() + weight2.numel() + bias.numel() + m * n
    return float(total * input.element_size())


TASK = Task(
    entry="combined_activation",
    dtypes=("float32",),
    signature=(
        "combined_activation(input: torch.Tensor, weight1: torch.Tensor, weight2: torch.Tensor, "
        "bias: torch.Tensor, *, out: torch.Tensor | None = None) -> torch.Tensor"
    ),
    description=(
        "With a 2-D input (M, K) and weight1 (K, N), compute z = input @ weight1, then "
        "y = tanh(sigmoid(z)) * weight2 + bias, where weight2 and bias broadcast against (M, N) "
        "(they are (M, N) or (N,) here). Return y as a new fp32 (M, N) tensor; if `out` is given, "
        "write y into it and return `out`."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("standard_2x3x4", STANDARD, {"mkn": (2, 3, 4), "mode": "standard"}),
        Case("standard_3x3x5", STANDARD, {"mkn": (3, 3, 5), "mode": "standard"}),
        Case("standard_4x3x6", STANDARD, {"mkn": (4, 3, 6), "mode": "standard"}),
        Case("standard_5x3x7", STANDARD, {"mkn": (5, 3, 7), "mode": "standard"}),
        Case("standard_out", STANDARD, {"mkn": (5, 3, 7), "mode": "standard", "out": True}),
        Case("standard", STANDARD, {"mkn": (256, 128, 192), "mode": "standard"}),
        Case("standard_vec", STANDARD, {"mkn": (256, 128, 192), "mode": "standard", "vec": True}),
        Case("outlier", OUTLIER, {"mkn": (256, 128, 192), "mode": "outlier", "outlier_scale": 20.0}),
    ],
    perf=[Case(f"n{s}", PERF, {"mkn": (s, s, s), "mode": "uniform", "vec": True}) for s in (1024, 2048, 4096)],
    flops=_flops,
    bytes=_bytes,
    version=3,  # tolerance widened by the tolerance audit, then by the GPU audit
    # audit (docs/TOLERANCES.md): the product's TF32 error passes tanh(sigmoid) and is multiplied by outlier weight2
    # (up to ~40x), reaching 1.5x the 1x allowance on the outlier case; 4x leaves the 2x headroom
    # GPU audit on an H100 (2026-11-27): the real TF32 product reached 0.56x of the 4x allowance on the
    # outlier case (HEADROOM needs <= 0.5); 6x leaves the margin
    tolerance=matmul_tolerance(6.0),
    inplace=True,
    notes="adds `out=` and 1-D weight2/bias cases; fixed randn cases are seeded; TF32 allowance for the product.",
)
