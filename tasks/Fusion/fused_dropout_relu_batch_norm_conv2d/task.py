"""Fusion/fused_dropout_relu_batch_norm_conv2d: dropout(ReLU(batch_norm(conv2d(input, weight, bias)))), NCHW fp32.

Batch normalization has no running statistics and no affine: it always normalizes each channel by the
batch's own mean and biased variance (eps 1e-5).
kbx departures: upstream compared every output bit for bit with torch's dropout RNG, which no independent
kernel can reproduce. kbx judges training-mode outputs by distribution (see `plausible`): every element
must be 0 or ReLU(BN(conv)) / (1 - p), with the keep rate within 6 binomial sd of 1 - p over the
elements whose kept value is nonzero, overall and in each half. Upstream's reference also passed
`training` to batch_norm, so training=False raised (no running statistics); kbx uses batch statistics in
both modes, `training` gating only dropout as the task's own description says, and adds eval cases
(compared elementwise). The fp32 comparison allows TF32 in the convolution (matmul_tolerance). Upstream's
fixed cases drew their inputs at random (here seeded cases of the same shapes).
"""


import torch
import torch.nn.functional as F

from kbx.tasks import OUTLIER, PERF, STANDARD, Call, Case, Task, matmul_tolerance
from kbx.tasks.inputs import rand_tensor
from kbx.tasks.stochastic import dropout_reason

# Triton's tl.dot truncates to TF32: over 1,000 seeds of outlier_eval the truncating model (the reference on
# TF32-truncated product operands against the fp32 reference, docs/BENCHMARKS.md 2026-11-28) reached
# 1.08x the 1x allowance (1 seed over 1); 3x leaves 2x headroom
TOLERANCE = matmul_tolerance(3)


def _pre_dropout(input, weight, bias, stride, padding, dilation, groups):
    y = F.conv2d(input, weight, bias, stride, padding, dilation, groups)
    y = F.batch_norm(y, None, None, training=True, eps=1e-5)
    return F.relu(y)


def reference(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, p=0.5, training=True,
              inplace=False) -> torch.Tensor:  # fmt: skip
    y = _pre_dropout(input, weight, bias, stride, padding, dilation, groups)
    return F.dropout(y, p=p, training=training, inplace=inplace)


def make_inputs(params, gen, device) -> Call:
    mode = params["mode"]
    x = rand_tensor(params["x"], "float32", mode, gen, device)
    w = rand_tensor(params["w"], "float32", mode, gen, device)
    b = rand_tensor((params["w"][0],), "float32", "standard", gen, device) if params.get("bias", True) else None
    kwargs = {k: params[k] for k in ("stride", "padding", "dilation", "groups", "p", "training", "inplace")
              if k in params}  # fmt: skip
    return Call((x, w, b), kwargs)


def plausible(call: Call, got) -> str | None:
    """None when deterministic (training=False, p <= 0 or p >= 1); '' for a plausible draw; else a reason.

    The kept value of each element is ReLU(BN(conv)) / (1 - p), recomputed in float64; the allowance is
    the task tolerance with its rms term scaled by the rms of the kept values. `call` must hold the
    inputs as generated (pristine).
    """
    x, w, b = call.args
    kw = call.kwargs
    p = float(kw.get("p", 0.5))
    if not kw.get("training", True) or p <= 0.0 or p >= 1.0:
        return None
    b64 = b.detach().double() if b is not None else None
    y = _pre_dropout(x.detach().double(), w.detach().double(), b64, kw.get("stride", 1), kw.get("padding", 0),
                     kw.get("dilation", 1), kw.get("groups", 1))  # fmt: skip
    kept_val = y / (1.0 - p)
    atol, rtol, rms_atol = TOLERANCE.for_dtype("float32")
    allowed = atol + rtol * kept_val.abs() + rms_atol * float(kept_val.square().mean().sqrt())
    return dropout_reason(got, kept_val, allowed, p)


def _out_numel(input, weight, stride, padding, dilation):
    def pair(v):
        return (v, v) if isinstance(v, int) else tuple(v)

    s, pd, d = pair(stride), pair(padding), pair(dilation)
    kh, kw = weight.shape[-2:]
    ho = (input.shape[-2] + 2 * pd[0] - d[0] * (kh - 1) - 1) // s[0] + 1
    wo = (input.shape[-1] + 2 * pd[1] - d[1] * (kw - 1) - 1) // s[1] + 1
    return input.shape[0] * weight.shape[0] * ho * wo


def _flops(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, p=0.5, training=True,
           inplace=False):  # fmt: skip
    n = _out_numel(input, weight, stride, padding, dilation)
    return float(2 * weight[0].numel() * n + 7 * n)


def _bytes(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, p=0.5, training=True,
           inplace=False):  # fmt: skip
    n = _out_numel(input, weight, stride, padding, dilation)
    nb = bias.numel() if bias is not None else 0
    return float((input.numel() + weight.numel() + nb + n) * input.element_size())


_SMALL = {"x": (1, 3, 8, 8), "w": (6, 3, 3, 3), "mode": "standard"}
_RAND = {"x": (2, 3, 32, 32), "w": (8, 3, 3, 3), "padding": 1, "p": 0.1}

TASK = Task(
    entry="fused_dropout_relu_batch_norm_conv2d",
    dtypes=("float32",),
    signature=(
        "fused_dropout_relu_batch_norm_conv2d(input: torch.Tensor, weight: torch.Tensor, "
        "bias: torch.Tensor | None = None, stride=1, padding=0, dilation=1, groups: int = 1, p: float = 0.5, "
        "training: bool = True, inplace: bool = False) -> torch.Tensor"
    ),
    description=(
        "Compute y = conv2d(input, weight, bias, stride, padding, dilation, groups) for an NCHW fp32 input and a "
        "(C_out, C_in/groups, kh, kw) weight; batch-normalize each output channel with the batch's own statistics "
        "over (N, H, W): (y - mean) / sqrt(biased var + 1e-5), no affine and no running statistics (in both "
        "modes); apply ReLU; if training, apply dropout: each element independently becomes 0 with probability p, "
        "else is scaled by 1 / (1 - p). `inplace` concerns only intermediates. Training-mode outputs are judged by "
        "distribution: any good random source is fine, torch's RNG stream need not be reproduced."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("small_default", STANDARD, dict(_SMALL)),
        Case("small_s2_p1", STANDARD, {**_SMALL, "stride": 2, "padding": 1}),
        Case("small_p03", STANDARD, {**_SMALL, "p": 0.3}),
        Case("small_groups6", STANDARD, {"x": (1, 6, 8, 8), "w": (6, 1, 3, 3), "groups": 6, "mode": "standard"}),
        Case("small_eval", STANDARD, {**_SMALL, "training": False}),
        Case("standard_train", STANDARD, {**_RAND, "mode": "standard"}),
        Case("outlier_train", OUTLIER, {**_RAND, "mode": "outlier"}),
        Case("standard_eval", STANDARD, {**_RAND, "mode": "standard", "training": False}),
        Case("outlier_eval", OUTLIER, {**_RAND, "mode": "outlier", "training": False}),
    ],
    perf=[Case(f"H{h}", PERF, {"x": (1, 3, h, h), "w": (64, 3, 3, 3), "mode": "uniform"}) for h in (512, 1024, 2048)],
    flops=_flops,
    bytes=_bytes,
    version=2,  # v2: TF32 truncation (tolerance 3x)
    tolerance=TOLERANCE,
    stochastic=plausible,
    notes=(
        "training-mode dropout judged by distribution (0 or kept value, keep rate within 6 sd), not by torch's RNG "
        "bits; batch statistics in both modes so training=False works (upstream raised); TF32 conv allowance; fixed "
        "random cases seeded."
    ),
)
