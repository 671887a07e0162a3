"""Convolution/conv2d: 2-D cross-correlation of an NCHW fp32 batch with optional bias, stride, padding,
dilation and groups.

The tolerance is matmul_tolerance(): a convolution is a matrix product (implicit GEMM), torch's
fp32 conv may run in TF32 through cuDNN by default and Triton's tl.dot uses TF32 by default, so
upstream's strict 1e-5 demanded cuDNN-identical rounding. kbx allows TF32-sized error instead.
kbx adds one case with bias, groups and per-axis stride/padding/dilation, which upstream's
correctness cases never exercise.
"""

import torch

from kbx.tasks import OUTLIER, PERF, STANDARD, Call, Case, Task, matmul_tolerance
from kbx.tasks.inputs import rand_tensor


def reference(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) -> torch.Tensor:
    return torch.nn.functional.conv2d(input, weight, bias, stride, padding, dilation, groups)


def make_inputs(params, gen, device) -> Call:
    mode = params["mode"]
    x = rand_tensor(params["x"], "float32", mode, gen, device, outlier_scale=20.0)
    w = rand_tensor(params["w"], "float32", mode, gen, device, outlier_scale=20.0)
    b = rand_tensor((params["w"][0],), "float32", mode, gen, device) if params.get("bias") else None
    kwargs = {k: params[k] for k in ("stride", "padding", "dilation", "groups") if k in params}
    return Call((x, w, b), kwargs)


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def _out_hw(input, weight, stride, padding, dilation):
    (sh, sw), (ph, pw), (dh, dw) = _pair(stride), _pair(padding), _pair(dilation)
    kh, kw = weight.shape[-2:]
    h = (input.shape[-2] + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    w = (input.shape[-1] + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    return h, w


def _flops(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    h, w = _out_hw(input, weight, stride, padding, dilation)
    outputs = input.shape[0] * weight.shape[0] * h * w
    macs_per_output = weight.shape[1] * weight.shape[2] * weight.shape[3]  # Cin/groups * kH * kW
    return float(outputs * 2 * macs_per_output + (outputs if bias is not None else 0))


def _bytes(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    h, w = _out_hw(input, weight, stride, padding, dilation)
    out = input.shape[0] * weight.shape[0] * h * w
    n = input.numel() + weight.numel() + (bias.numel() if bias is not None else 0) + out
    return float(n) * input.element_size()


def _case(name, kind, x, w, mode="standard", beyond_contract=False, **extra):
    return Case(name, kind, {"x": x, "w": w, "mode": mode, **extra}, extra=beyond_contract)


TASK = Task(
    entry="conv2d",
    dtypes=("float32",),
    signature=(
        "conv2d(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None, "
        "stride: int | tuple[int, int] = 1, padding: int | tuple[int, int] = 0, "
        "dilation: int | tuple[int, int] = 1, groups: int = 1) -> torch.Tensor"
    ),
    description=(
        "2-D cross-correlation (no kernel flip) of input (N, Cin, H, W) with weight (Cout, Cin/groups, kH, kW), "
        "all fp32: out[n, co, i, j] = bias[co] + sum over ci in co's group, kh, kw of "
        "input[n, ci, i*sH - pH + kh*dH, j*sW - pW + kw*dW] * weight[co, ci', kh, kw], with zero padding "
        "outside the input. Int stride/padding/dilation apply to both axes; bias may be None. Output "
        "(N, Cout, Hout, Wout) with Hout = (H + 2*pH - dH*(kH-1) - 1) // sH + 1 (same for W)."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        _case("defaults", STANDARD, (1, 3, 5, 5), (2, 3, 3, 3)),
        _case("stride2", STANDARD, (1, 3, 5, 5), (2, 3, 3, 3), stride=2),
        _case("padding1", STANDARD, (1, 3, 5, 5), (2, 3, 3, 3), padding=1),
        _case("dilation2", STANDARD, (1, 3, 5, 5), (2, 3, 3, 3), dilation=2),
        _case("standard", STANDARD, (2, 3, 16, 16), (4, 3, 3, 3), stride=2, padding=1),
        _case("outlier", OUTLIER, (2, 3, 16, 16), (4, 3, 3, 3), "outlier", stride=2, padding=1),
        _case("groups2_bias_pairs", STANDARD, (2, 4, 9, 11), (6, 2, 3, 3), beyond_contract=True, bias=True, groups=2,
              stride=(1, 2), padding=(1, 2), dilation=(2, 1)),
    ],
    # upstream's family: x (2^(i-4), 2^(i-1), 16, 16), Cout 2^i, 3x3, bias, stride 1, no padding;
    # i = 9..11 are the sizes that keep an H100 busy beyond launch overhead
    perf=[
        _case(f"i{i}", PERF, (2 ** (i - 4), 2 ** (i - 1), 16, 16), (2**i, 2 ** (i - 1), 3, 3), bias=True)
        for i in (9, 10, 11)
    ],
    flops=_flops,
    bytes=_bytes,
    # x2: over 400 seeds of the outlier case (kbx.quality audit --tail --case outlier), one TF32 product against
    # exact fp32 reaches 0.68 of the x1 allowance and two TF32 products that round differently 1.60 (36 seeds
    # over 1); the expert failed 1 of 512 elements (relative 1.24e-3) on an H100 once (2026-11-27). At x2: 0.34, 0.80.
    tolerance=matmul_tolerance(2),
    version=2,
    notes="TF32-sized tolerance (matmul_tolerance) instead of upstream's cuDNN-identical 1e-5",
)
