"""Fusion/fused_instance_norm_selu_conv2d: instance_norm(SELU(conv2d(input, weight, bias))), NCHW fp32, no affine.

kbx departures: the fp32 comparison allows TF32-level error (matmul_tolerance), since torch's own cuDNN
convolution uses TF32 by default and upstream's 1e-5 demanded cuDNN-identical numerics. Upstream's fixed
cases drew their inputs at random (here seeded cases of the same shapes). Perf shapes are x (8, 32, H, H),
weight (64, 32, 3, 3), H = 128..512 (upstream's largest input was 34 GB).
"""

import torch
import torch.nn.functional as F

from kbx.tasks import OUTLIER, PERF, STANDARD, Call, Case, Task, matmul_tolerance
from kbx.tasks.inputs import rand_tensor


def reference(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, num_features=None, eps=1e-05,
              momentum=0.1, affine=False, track_running_stats=False) -> torch.Tensor:  # fmt: skip
    y = F.selu(F.conv2d(input, weight, bias, stride, padding, dilation, groups))
    return F.instance_norm(y, eps=eps, momentum=momentum)


def make_inputs(params, gen, device) -> Call:
    mode = params["mode"]
    x = rand_tensor(params["x"], "float32", mode, gen, device)
    w = rand_tensor(params["w"], "float32", mode, gen, device)
    kwargs = {k: params[k] for k in ("stride", "padding", "dilation", "groups", "eps") if k in params}
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


def _flops(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, num_features=None, eps=1e-05,
           momentum=0.1, affine=False, track_running_stats=False):  # fmt: skip
    n = _out_numel(input, weight, stride, padding, dilation)
    return float(2 * weight[0].numel() * n + 8 * n)


def _bytes(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, num_features=None, eps=1e-05,
           momentum=0.1, affine=False, track_running_stats=False):  # fmt: skip
    n = _out_numel(input, weight, stride, padding, dilation)
    nb = bias.numel() if bias is not None else 0
    return float((input.numel() + weight.numel() + nb + n) * input.element_size())


_SMALL = {"x": (1, 3, 5, 5), "w": (3, 3, 3, 3), "mode": "standard"}
_RAND = {"x": (2, 3, 32, 32), "w": (8, 3, 3, 3), "bias": True, "padding": 1}

TASK = Task(
    entry="fused_instance_norm_selu_conv2d",
    dtypes=("float32",),
    signature=(
        "fused_instance_norm_selu_conv2d(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None, "
        "stride=1, padding=0, dilation=1, groups: int = 1, num_features: int | None = None, eps: float = 1e-05, "
        "momentum: float = 0.1, affine: bool = False, track_running_stats: bool = False) -> torch.Tensor"
    ),
    description=(
        "Compute y = conv2d(input, weight, bias, stride, padding, dilation, groups) for an NCHW fp32 input and a "
        "(C_out, C_in/groups, kh, kw) weight; apply SELU, 1.0507009873554805 * (y if y > 0 else "
        "1.6732632423543772 * (exp(y) - 1)); then instance normalization: each (n, c) plane is normalized by its "
        "own mean and biased variance over (H, W), (s - mean) / sqrt(var + eps). No affine, no running statistics: "
        "num_features, momentum, affine and track_running_stats do not change the result."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("small_default", STANDARD, dict(_SMALL)),
        Case("small_s2", STANDARD, {**_SMALL, "stride": 2}),
        Case("small_p1", STANDARD, {**_SMALL, "padding": 1}),
        Case("standard", STANDARD, {**_RAND, "mode": "standard"}),
        Case("outlier", OUTLIER, {**_RAND, "mode": "outlier"}),
        Case("standard_groups2_dil2", STANDARD, {"x": (2, 4, 20, 20), "w": (6, 2, 3, 3), "groups": 2, "dilation": 2,
                                                 "bias": True, "mode": "standard"}),  # fmt: skip
    ],
    perf=[
        Case(f"H{h}", PERF, {"x": (8, 32, h, h), "w": (64, 32, 3, 3), "bias": True, "mode": "uniform"})
        for h in (128, 256, 512)
    ],
    flops=_flops,
    bytes=_bytes,
    version=2,  # v2: TF32 truncation
    # Triton's tl.dot truncates to TF32: over 1,000 outlier seeds the truncating model (kbx.quality
    # audit --tail --tail-model truncating, 2026-11-28) reached 1.005x the 1x allowance; 3x leaves 2x headroom
    tolerance=matmul_tolerance(3),
    notes="TF32-level tolerance for the convolution; fixed random cases seeded; perf shapes resized.",
)
