"""Fusion/fused_gelu_conv2d: GELU(conv2d(input, weight, bias)), NCHW fp32.

kbx departures: the fp32 comparison allows TF32-level error (matmul_tolerance), since torch's own cuDNN
convolution uses TF32 by default and upstream's 1e-5 demanded cuDNN-identical numerics. Upstream's fixed
cases drew their inputs at random (here seeded cases of the same shapes); out= is never passed (inputs
are read-only to a kernel here). Perf shapes are x (16, 16, h, h) with h = 128..1024. Outputs up to 2^16 elements are judged against
float64, with an error allowed from each element's terms (kbx.contract.terms): the outlier case's large
products, truncated to TF32, failed an honest expert on 2 of 1,000 seeds under the tolerance alone.
"""

import torch.nn.functional as F

from kbx.contract.terms import magnitudes, terms_check
from kbx.tasks import OUTLIER, PERF, STANDARD, Call, Case, Task, matmul_tolerance
from kbx.tasks.inputs import rand_tensor

# TF32 over 400 outlier seeds (kbx.quality audit --tail): worst 2.0x the 1x allowance; x5 leaves 2x headroom
TOLERANCE = matmul_tolerance(5)
GELU_MAX_SLOPE = 1.13  # GELU's derivative peaks at 1.129 (x = sqrt 2); its tanh form's likewise


def reference(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, approximate="none", out=None):
    y = F.conv2d(input, weight, bias, stride, padding, dilation, groups)
    y = F.gelu(y, approximate=approximate)
    if out is not None:
        out.copy_(y)
        return out
    return y


def terms(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, approximate="none", out=None):
    """Each output's products' magnitudes, times GELU's largest slope."""
    return GELU_MAX_SLOPE * F.conv2d(*magnitudes(input, weight, bias), stride, padding, dilation, groups)


def make_inputs(params, gen, device) -> Call:
    mode = params["mode"]
    x = rand_tensor(params["x"], "float32", mode, gen, device)
    w = rand_tensor(params["w"], "float32", mode, gen, device)
    kwargs = {k: params[k] for k in ("stride", "padding", "dilation", "groups", "approximate") if k in params}
    if params.get("bias"):
        kwargs["bias"] = rand_tensor((params["w"][0],), "float32", "standard", gen, device)
    return Call((x, w), kwargs)


def _out_numel(input, weight, stride, padding, dilation):
    def pair(v):
        return (v, v) if isinstance(v, int) else tuple(v)

    s, p, d = pair(stride), pair(padding), pair(dilation)
    kh, kw = weight.shape[-2:]
    ho = (input.shape[-2] + 2 * p[0] - d[0] * (kh - 1) - 1) // s[0] + 1
    wo = (input.shape[-1] + 2 * p[1] - d[1] * (kw - 1) - 1) // s[1] + 1
    return input.shape[0] * weight.shape[0] * ho * wo


def _flops(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, approximate="none", out=None):
    n = _out_numel(input, weight, stride, padding, dilation)
    return float(2 * weight[0].numel() * n + 8 * n)


def _bytes(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, approximate="none", out=None):
    n = _out_numel(input, weight, stride, padding, dilation)
    nb = bias.numel() if bias is not None else 0
    return float((input.numel() + weight.numel() + nb + n) * input.element_size())


_SMALL = {"x": (1, 3, 5, 5), "w": (2, 3, 3, 3), "mode": "standard"}
_RAND = {"x": (2, 3, 32, 32), "w": (8, 3, 3, 3), "bias": True, "padding": 1, "approximate": "tanh"}

TASK = Task(
    entry="fused_gelu_conv2d",
    dtypes=("float32",),
    signature=(
        "fused_gelu_conv2d(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None, stride=1, "
        "padding=0, dilation=1, groups: int = 1, approximate: str = 'none', out: torch.Tensor | None = None) "
        "-> torch.Tensor"
    ),
    description=(
        "Compute y = conv2d(input, weight, bias, stride, padding, dilation, groups) for an NCHW fp32 input and a "
        "(C_out, C_in/groups, kh, kw) weight (cross-correlation, zero padding, optional per-channel bias), then "
        "GELU (exact erf form for approximate='none', tanh form for 'tanh'). Return the result (written into "
        "`out` and returned when `out` is given)."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("small_default", STANDARD, dict(_SMALL)),
        Case("small_bias", STANDARD, {**_SMALL, "bias": True}),
        Case("small_s2_p1", STANDARD, {**_SMALL, "x": (1, 3, 8, 8), "stride": 2, "padding": 1}),
        Case("small_dil2_groups4", STANDARD, {"x": (1, 4, 10, 10), "w": (4, 1, 3, 3), "dilation": 2, "groups": 4,
                                              "mode": "standard"}),  # fmt: skip
        Case("standard", STANDARD, {**_RAND, "mode": "standard"}),
        Case("outlier", OUTLIER, {**_RAND, "mode": "outlier"}),
    ],
    perf=[
        Case(f"h{h}", PERF, {"x": (16, 16, h, h), "w": (32, 16, 3, 3), "padding": 1, "mode": "uniform"})
        for h in (128, 256, 512, 1024)
    ],
    flops=_flops,
    bytes=_bytes,
    version=3,  # v2: tolerance widened (TF32 tail of the outlier case); v3: the terms' allowance
    tolerance=TOLERANCE,
    stochastic=terms_check(reference, terms, TOLERANCE),
    notes="TF32-level tolerance for the convolution, from the terms' size where they add up; fixed random cases "
          "seeded; out= not exercised.",  # fmt: skip
)
