"""Quantization/matmul_w8a8: int8 x int8 matrix product with dynamic per-row / per-column scales.

kbx departure: upstream's reference is a plain fp32 matmul judged with rmse <= 0.1, which the
per-row x per-column int8 scheme its prompt describes cannot reach (measured rmse 0.11-0.52), and
it left rounding, clamping and zero scales unspecified. kbx states one exact quantization
contract (see `reference` and the description) and compares with the default fp32 tolerance plus
2e-4 x rms(output) (see the tolerance comment).
An honest kernel following the contract reproduces the reference to the last bit or nearly so;
a plain fp32 matmul without quantization misses by ~1e-3 relative and fails, as intended.
The contract is bit-sensitive: v = x / s must be an IEEE round-to-nearest fp32 division (in
Triton: tl.math.div_rn; plain `/` may be approximate on GPU) and |v| + 0.5 is rounded in fp32
before the floor, since a one-ulp change of v at a half-integer flips a quantized value.
"""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task, Tolerance
from kbx.tasks.inputs import literal, rand_tensor

CLAMP = 10.0  # random inputs are clamped to [-10, 10], as upstream
OUTLIER_PROB = 0.01


def _scale(amax: torch.Tensor) -> torch.Tensor:
    # a tensor divisor: torch on CUDA turns division by a Python scalar into multiplication by
    # its rounded reciprocal, which is not the IEEE quotient the contract specifies
    s = amax / torch.full_like(amax, 127.0)
    return torch.where(amax == 0, torch.ones_like(s), s)


def _quantize(v: torch.Tensor) -> torch.Tensor:
    """Round half away from zero, evaluated in fp32, clamped to [-127, 127]."""
    return torch.clamp(torch.sign(v) * torch.floor(v.abs() + 0.5), -127, 127).to(torch.int8)


def reference(input: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    s_x = _scale(input.abs().amax(dim=1))  # (M,) per-row activation scale
    s_w = _scale(weight.abs().amax(dim=0))  # (N,) per-column weight scale
    q_x = _quantize(input / s_x[:, None])
    q_w = _quantize(weight / s_w[None, :])
    # |q| <= 127, so every partial sum is an integer below 2^53: the fp64 product is exact
    acc = q_x.double() @ q_w.double()
    return acc.float() * s_x[:, None] * s_w[None, :]


def make_inputs(params, gen, device) -> Call:
    if "x" in params:
        return Call((literal(params["x"], "float32", device), literal(params["w"], "float32", device)))
    m, k, n = params["mkn"]
    mode = params["mode"]
    x = rand_tensor((m, k), "float32", mode, gen, device, outlier_prob=OUTLIER_PROB)
    w = rand_tensor((k, n), "float32", mode, gen, device, outlier_prob=OUTLIER_PROB)
    if mode != "uniform":
        x, w = x.clamp(-CLAMP, CLAMP), w.clamp(-CLAMP, CLAMP)
    return Call((x, w))


def _flops(input, weight):
    return 2.0 * input.shape[0] * input.shape[1] * weight.shape[1]


def _bytes(input, weight):
    m, k = input.shape
    n = weight.shape[1]
    return float((m * k + k * n + m * n) * 4)


TASK = Task(
    entry="matmul_w8a8",
    dtypes=("float32",),
    signature="matmul_w8a8(input: torch.Tensor, weight: torch.Tensor) -> torch.Tensor",
    description=(
        "W8A8 matrix product of input x (M, K) fp32 and weight w (K, N) fp32, returning (M, N) fp32. "
        "Scales in fp32: s_x[m] = max_k |x[m,k]| / 127 per row and s_w[n] = max_k |w[k,n]| / 127 per column, "
        "a zero max giving scale 1.0. Quantize v = x / s_x[m] (resp. w / s_w[n]), an IEEE fp32 division, to int8 "
        "q = clamp(sign(v) * floor(|v| + 0.5), -127, 127) with |v| + 0.5 rounded in fp32 (round half away from "
        "zero). Accumulate q_x @ q_w exactly in int32, then out[m,n] = (float(acc) * s_x[m]) * s_w[n] in fp32."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("corner_zero_column", FIXED, {"x": [[1.0, 2.0]], "w": [[1.0, 0.0, -1.0], [2.0, 0.0, 3.0]]}),
        Case("corner_1x1", FIXED, {"x": [[127.0]], "w": [[-127.0]]}),
        Case("corner_extreme_scale", FIXED, {"x": [[1.0, 1.0]], "w": [[100.0, 0.01, -0.01], [0.01, -100.0, 0.01]]}),
        Case("corner_neg_zero", FIXED, {"x": [[1.0, -1.0]], "w": [[0.0, -0.0], [-0.0, 1.0]]}),
        Case("standard_32x256x128", STANDARD, {"mkn": (32, 256, 128), "mode": "standard"}),
        Case("standard_64x128x64", STANDARD, {"mkn": (64, 128, 64), "mode": "standard"}),
        Case("outlier_32x256x128", OUTLIER, {"mkn": (32, 256, 128), "mode": "outlier"}),
        Case("outlier_64x128x64", OUTLIER, {"mkn": (64, 128, 64), "mode": "outlier"}),
    ],
    perf=[
        Case(f"m{m}_k{k}_n{n}", PERF, {"mkn": (m, k, n), "mode": "uniform"})
        for m, k, n in ((512, 1024, 2048), (1024, 2048, 4096), (2048, 4096, 4096), (4096, 4096, 4096))
    ],
    flops=_flops,
    bytes=_bytes,
    version=2,  # tolerance widened by the GPU tolerance audit
    # GPU audit on an H100 (2026-11-27): the fp32 reference itself (its float product of the int8
    # values, sums beyond fp32's exact integers) was 3.3x the default bound away from float64 at
    # m512_k1024_n2048, 3e-5 x rms; 2e-4 x rms covers it at K=4096 too, and still rejects a plain fp32
    # matmul without the quantization (~1e-3 relative)
    tolerance=Tolerance(rms_atol={"float32": 2e-4}),
    notes=(
        "explicit int8 contract (per-row/per-column scales, round half away, int32 accumulation) "
        "replaces upstream's unreachable rmse thresholds."
    ),
)
