"""Quantization/linear_w4a16: fp16 activations times int4 weights with per-output-row scales.

kbx departure: upstream's reference is a plain fp16 F.linear judged with cosine / l1 / absolute
rmse <= 0.15 thresholds that the per-row int4 scheme its prompt describes cannot meet (rmse 1.3-6.6
on random inputs; 3 of 4 corners fail), and rounding, clamping and zero rows were unspecified. kbx
states one exact quantization contract (see `reference` and the description) and compares with the
fp16 two-ulp rule plus 1e-3 * rms(output) for fp32 summation order. A plain fp16 linear without
quantization misses by several percent and fails, as intended. The quantized weights are exact
(IEEE fp32 division, round half away from zero: in Triton use tl.math.div_rn); products of fp16
activations with int4 values are exact in fp32, so only the order of the fp32 sum may differ.
The byte model counts the fp16 weight the entry must read (upstream counted packed int4 bytes).
"""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task, Tolerance
from kbx.tasks.inputs import literal, rand_tensor

CLAMP = 10.0  # random inputs are clamped to [-10, 10], as upstream
OUTLIER_PROB = 0.01


def reference(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    w = weight.float()
    amax = w.abs().amax(dim=1)
    s = amax / torch.full_like(amax, 7.0)  # tensor divisor: an IEEE quotient on every device
    s = torch.where(amax == 0, torch.ones_like(s), s)
    v = w / s[:, None]
    q = torch.clamp(torch.sign(v) * torch.floor(v.abs() + 0.5), -8, 7)
    # fp16 x int4 products and their sums are exact in fp64; rounding once to fp32 gives the
    # correctly rounded fp32 accumulator
    acc = torch.matmul(input.double(), q.double().t()).float()
    out = acc * s[None, :]
    if bias is not None:
        out = out + bias.float()
    return out.half()


def make_inputs(params, gen, device) -> Call:
    if "x" in params:
        x, w = literal(params["x"], "float16", device), literal(params["w"], "float16", device)
        b = literal(params["bias"], "float16", device) if "bias" in params else None
        return Call((x, w, b))
    batch, d_in, d_out = params["shape"]
    mode = params["mode"]
    x = rand_tensor((batch, d_in), "float32", mode, gen, device, outlier_prob=OUTLIER_PROB)
    w = rand_tensor((d_out, d_in), "float32", mode, gen, device, outlier_prob=OUTLIER_PROB)
    b = rand_tensor((d_out,), "float32", mode, gen, device) if params.get("bias") else None
    if mode != "uniform":
        x, w = x.clamp(-CLAMP, CLAMP), w.clamp(-CLAMP, CLAMP)
    return Call((x.half(), w.half(), None if b is None else b.half()))


def _flops(input, weight, bias=None):
    return 2.0 * input.shape[0] * input.shape[1] * weight.shape[0]


def _bytes(input, weight, bias=None):
    n_bias = 0 if bias is None else bias.numel()
    return float((input.numel() + weight.numel() + n_bias + input.shape[0] * weight.shape[0]) * 2)


def _random(mode, shape, bias=False):
    kind = STANDARD if mode == "standard" else OUTLIER
    name = f"{mode}_{'x'.join(map(str, shape))}{'_bias' if bias else ''}"
    return Case(name, kind, {"shape": shape, "mode": mode, "bias": bias})


TASK = Task(
    entry="linear_w4a16",
    dtypes=("float16",),
    signature=(
        "linear_w4a16(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor"
    ),
    description=(
        "W4A16 linear layer: input x (B, Din) fp16, weight w (Dout, Din) fp16, optional bias (Dout,) fp16; "
        "returns (B, Dout) fp16. Per output row n, in fp32: s[n] = max_k |w[n,k]| / 7 (1.0 if that max is 0), "
        "v = w[n,k] / s[n] as an IEEE fp32 division, q = clamp(sign(v) * floor(|v| + 0.5), -8, 7) (round half "
        "away from zero; int4, storable two per byte). Then acc[b,n] = sum_k x[b,k] * q[n,k] accumulated in "
        "fp32, out = acc * s[n] (+ bias[n]) in fp32, rounded once to fp16."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("corner_int4_boundary", FIXED, {"x": [[1.0, 1.0, 1.0, 1.0]], "w": [[7.0, -8.0, 3.5, -3.5]]}),
        Case(
            "corner_extreme_scale",
            FIXED,
            {"x": [[1.0, 1.0, 1.0, 1.0]], "w": [[100.0, 0.1, 0.1, 0.1], [0.1, 0.1, 0.1, 0.1]]},
        ),
        Case(
            "corner_zero_row",
            FIXED,
            {"x": [[0.5, -1.0, 2.0, 0.25], [1.5, 0.75, -0.5, -2.0]],
             "w": [[1.0, 2.0, 3.0, 4.0], [0.0, 0.0, 0.0, 0.0], [5.0, 6.0, 7.0, 8.0]]},
        ),  # fmt: skip
        Case(
            "corner_single_output",
            FIXED,
            {"x": [[2.0, 2.0, 2.0, 2.0]], "w": [[0.5, -0.5, 1.0, -1.0]], "bias": [10.0]},
        ),
        _random("standard", (16, 256, 128)),
        _random("standard", (8, 128, 64)),
        _random("standard", (8, 192, 96), bias=True),
        _random("outlier", (16, 256, 128)),
        _random("outlier", (8, 128, 64)),
    ],
    perf=[
        Case(f"b{b}_din{i}_dout{o}", PERF, {"shape": (b, i, o), "mode": "uniform", "bias": True})
        for b, i, o in ((1, 4096, 4096), (8, 4096, 4096), (32, 4096, 16384), (128, 8192, 8192))
    ],
    flops=_flops,
    bytes=_bytes,
    # Two correct kernels sum the same exact fp32 products in different orders; near-zero outputs then
    # differ by ~1e-7 * sqrt(K) * rms(acc) before the fp16 rounding, which the absolute fp16 floor may
    # not cover. 1e-3 * rms is below one fp16 ulp of a typical output and far below int4 error (~5%).
    tolerance=Tolerance(rms_atol={"float16": 1e-3}),
    notes=(
        "explicit int4 contract (per-row scale max/7, round half away, clamp [-8, 7], fp32 accumulation) "
        "replaces upstream's unreachable rmse thresholds; bytes count the fp16 weight read."
    ),
)
