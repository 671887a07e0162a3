"""Quantization/conv2d_w8a8: int8 2-D convolution, per-tensor activation and per-output-channel weight scales.

kbx departure: upstream's reference is a plain fp32 F.conv2d judged with cosine / l1 / absolute
rmse <= 0.1 thresholds, which the int8 scheme its prompt describes misses on both outlier leaves
(rmse 0.14-0.18), with rounding, clamping and zero scales unspecified. kbx states one exact
quantization contract (see `reference` and the description) and compares with the default fp32
tolerance; a plain fp32 convolution without quantization fails, as intended. The contract is
bit-sensitive: v = x / s must be an IEEE round-to-nearest fp32 division (in Triton:
tl.math.div_rn) and |v| + 0.5 is rounded in fp32 before the floor. Upstream's corner cases are
random draws, so here they are seeded STANDARD cases.
"""

import torch

from kbx.tasks import OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor

CLAMP = 10.0  # random inputs are clamped to [-10, 10], as upstream
OUTLIER_PROB = 0.01


def _scale(amax: torch.Tensor) -> torch.Tensor:
    s = amax / torch.full_like(amax, 127.0)  # tensor divisor: an IEEE quotient on every device
    return torch.where(amax == 0, torch.ones_like(s), s)


def _quantize(v: torch.Tensor) -> torch.Tensor:
    """Round half away from zero, evaluated in fp32, clamped to [-127, 127]."""
    return torch.clamp(torch.sign(v) * torch.floor(v.abs() + 0.5), -127, 127).to(torch.int8)


def reference(input, weight, bias=None, stride: int = 1, padding: int = 0) -> torch.Tensor:
    s_x = _scale(input.abs().amax())  # one scale for the whole activation tensor
    s_w = _scale(weight.abs().amax(dim=(1, 2, 3)))  # (Cout,): one scale per output channel
    q_x = _quantize(input / s_x.expand_as(input))
    q_w = _quantize(weight / s_w[:, None, None, None])
    # integer products summed over Cin*kh*kw stay far below 2^53: the fp64 convolution is exact
    acc = torch.nn.functional.conv2d(q_x.double(), q_w.double(), None, stride, padding)
    out = acc.float() * s_x * s_w[None, :, None, None]
    if bias is not None:
        out = out + bias[None, :, None, None]
    return out


def make_inputs(params, gen, device) -> Call:
    mode = params["mode"]
    x = rand_tensor(params["x_shape"], "float32", mode, gen, device, outlier_prob=OUTLIER_PROB)
    w = rand_tensor(params["w_shape"], "float32", mode, gen, device, outlier_prob=OUTLIER_PROB)
    b = None
    if params.get("bias"):
        b = rand_tensor((params["w_shape"][0],), "float32", mode, gen, device, outlier_prob=OUTLIER_PROB)
    if mode != "uniform":
        x, w = x.clamp(-CLAMP, CLAMP), w.clamp(-CLAMP, CLAMP)
        b = None if b is None else b.clamp(-CLAMP, CLAMP)
    if "zero_channel" in params:
        w[params["zero_channel"]] = 0.0
    if "scale" in params:
        x, w = x * params["scale"], w * params["scale"]
    if "bias_values" in params:
        b = literal(params["bias_values"], "float32", device)
    kwargs = {k: params[k] for k in ("stride", "padding") if k in params}
    return Call((x, w, b), kwargs)


def _out_hw(input, weight, stride, padding):
    h, w = input.shape[2:]
    kh, kw = weight.shape[2:]
    return (h + 2 * padding - kh) // stride + 1, (w + 2 * padding - kw) // stride + 1


def _flops(input, weight, bias=None, stride=1, padding=0):
    ho, wo = _out_hw(input, weight, stride, padding)
    c_out, c_in, kh, kw = weight.shape
    return 2.0 * input.shape[0] * c_out * ho * wo * c_in * kh * kw


def _bytes(input, weight, bias=None, stride=1, padding=0):
    ho, wo = _out_hw(input, weight, stride, padding)
    n_out = input.shape[0] * weight.shape[0] * ho * wo
    n_bias = 0 if bias is None else bias.numel()
    return float((input.numel() + weight.numel() + n_bias + n_out) * 4)


def _case(name, kind, x_shape, w_shape, mode="standard", **extra):
    return Case(name, kind, {"x_shape": x_shape, "w_shape": w_shape, "mode": mode, **extra})


def _random(mode):
    kind = STANDARD if mode == "standard" else OUTLIER
    return [
        _case(f"{mode}_3x3_bias_pad1", kind, (2, 3, 16, 16), (8, 3, 3, 3), mode, bias=True, padding=1),
        _case(f"{mode}_1x1", kind, (1, 16, 8, 8), (16, 16, 1, 1), mode),
    ]


TASK = Task(
    entry="conv2d_w8a8",
    dtypes=("float32",),
    signature=(
        "conv2d_w8a8(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None, "
        "stride: int = 1, padding: int = 0) -> torch.Tensor"
    ),
    description=(
        "W8A8 2-D convolution (dilation 1, groups 1, zero padding) of x (N, Cin, H, W) fp32 with w (Cout, Cin, kh, kw) "
        "fp32, returning (N, Cout, Ho, Wo) fp32. Scales in fp32: s_x = max |x| / 127 over the whole input tensor, "
        "s_w[c] = max |w[c]| / 127 per output channel, a zero max giving scale 1.0. Quantize v = x / s_x "
        "(resp. w / s_w[c]), an IEEE fp32 division, to q = clamp(sign(v) * floor(|v| + 0.5), -127, 127) with "
        "|v| + 0.5 rounded in fp32. Convolve q_x with q_w accumulating exactly in int32, then "
        "out = (float(acc) * s_x) * s_w[c], plus bias[c] in fp32 when bias is given."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        _case("corner_1x1_conv", STANDARD, (1, 8, 4, 4), (16, 8, 1, 1)),
        _case("corner_stride2", STANDARD, (1, 3, 8, 8), (4, 3, 3, 3), stride=2),
        _case("corner_zero_kernel", STANDARD, (1, 1, 5, 5), (2, 1, 3, 3), zero_channel=0, padding=1),
        _case("corner_large_bias", STANDARD, (1, 2, 4, 4), (3, 2, 2, 2), scale=0.01, bias_values=[100.0, -100.0, 50.0]),
        *_random("standard"),
        *_random("outlier"),
    ],
    perf=[
        _case(f"n{n}_c{ci}_{h}x{h}_o{co}_k{k}", PERF, (n, ci, h, h), (co, ci, k, k), "uniform", padding=1)
        for n, ci, h, co, k in ((1, 3, 224, 64, 7), (2, 64, 56, 128, 3), (4, 128, 28, 256, 3), (8, 128, 56, 128, 3))
    ],
    flops=_flops,
    bytes=_bytes,
    notes=(
        "explicit int8 contract (per-tensor activation / per-output-channel weight scales, round half away, "
        "int32 accumulation) replaces upstream's unreachable rmse thresholds; corners are seeded random draws."
    ),
)
