"""Fusion/fused_layer_norm_relu_linear: layer_norm(relu(input @ weight^T + bias)) without affine parameters.

kbx departures: normalized_shape=None (left undefined upstream) means the last dimension; the fp32
comparison allows TF32-level error (matmul_tolerance). Upstream's fixed randn inputs are seeded
draws of the same shapes.
"""

import torch
import torch.nn.functional as F

from kbx.tasks import OUTLIER, PERF, STANDARD, Call, Case, Task, matmul_tolerance
from kbx.tasks.inputs import rand_tensor


def reference(input, weight, bias=None, normalized_shape=None, eps=1e-05, elementwise_affine=True):
    z = F.relu(F.linear(input, weight, bias))
    if normalized_shape is None:
        normalized_shape = z.shape[-1:]
    elif isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    return F.layer_norm(z, tuple(normalized_shape), eps=eps)


def make_inputs(params, gen, device) -> Call:
    (m, k), n = params["shape"], params["out"]
    mode = params["mode"]
    x = rand_tensor((m, k), "float32", mode, gen, device)
    w = rand_tensor((n, k), "float32", mode, gen, device)
    b = rand_tensor((n,), "float32", "standard", gen, device) if params.get("bias", True) else None
    kwargs = {k: params[k] for k in ("normalized_shape", "eps", "elementwise_affine") if k in params}
    return Call((x, w, b), kwargs)


def _flops(input, weight, bias=None, normalized_shape=None, eps=1e-05, elementwise_affine=True):
    m, n = input.numel() // input.shape[-1], weight.shape[0]
    return float(2 * m * input.shape[-1] * n + 9 * m * n)


def _bytes(input, weight, bias=None, normalized_shape=None, eps=1e-05, elementwise_affine=True):
    m, n = input.numel() // input.shape[-1], weight.shape[0]
    nb = bias.numel() if bias is not None else 0
    return float((input.numel() + weight.numel() + nb + m * n) * input.element_size())


_FIX = {"shape": (4, 5), "out": 3, "mode": "standard"}

TASK = Task(
    entry="fused_layer_norm_relu_linear",
    dtypes=("float32",),
    signature=(
        "fused_layer_norm_relu_linear(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None, "
        "normalized_shape: int | tuple[int, ...] | None = None, eps: float = 1e-05, elementwise_affine: bool = True) "
        "-> torch.Tensor"
    ),
    description=(
        "Compute z = max(input @ weight^T + bias, 0) for fp32 input (M, K), weight (N, K), optional bias (N,). "
        "Layer-normalize z over its trailing dims given by normalized_shape (an int means (int,); None means the "
        "last dim, (N,)): (z - mean) / sqrt(biased variance + eps), with NO affine parameters whatever "
        "elementwise_affine says (a row that is all zeros normalizes to zeros). Return the (M, N) fp32 result."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("small_bias", STANDARD, {**_FIX, "normalized_shape": 3}),
        Case("small_no_bias", STANDARD, {**_FIX, "normalized_shape": 3, "bias": False}),
        Case("small_tuple_shape", STANDARD, {**_FIX, "normalized_shape": (3,)}),
        Case("small_eps", STANDARD, {**_FIX, "normalized_shape": 3, "eps": 1e-3}),
        Case("small_none_shape", STANDARD, {**_FIX, "elementwise_affine": False}),
        Case("standard", STANDARD, {"shape": (64, 128), "out": 256, "mode": "standard", "normalized_shape": 256}),
        Case("outlier", OUTLIER, {"shape": (64, 128), "out": 256, "mode": "outlier", "normalized_shape": 256}),
    ],
    perf=[
        Case(f"B32_in2^{i}", PERF, {"shape": (32, 2**i), "out": 2 ** (i - 1), "mode": "standard",
                                    "normalized_shape": 2 ** (i - 1)})  # fmt: skip
        for i in (13, 14, 15)
    ],
    flops=_flops,
    bytes=_bytes,
    version=2,  # tolerance widened: TF32 tail of the outlier case
    # TF32 over 400 outlier seeds (kbx.quality audit --tail, 2026-11-27): worst 0.56x the 1x allowance, over
    # the audit's HEADROOM of 0.5; x2 leaves 2x headroom
    tolerance=matmul_tolerance(2),
    notes="normalized_shape=None means the last dim; TF32-level tolerance; fixed randn cases seeded.",
)
