"""SpatialOps/interpolate: resize a 4-D NCHW fp32 tensor with nearest, bilinear or bicubic sampling.

Upstream has three randn cases and no random-mode keys; kbx adds non-integer ratios, downsampling,
align_corners=True and an outlier case. Nearest cases keep exact power-of-two ratios, where the
source index floor(dst * scale) is not sensitive to rounding.
"""

import torch

from kbx.tasks import OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import rand_tensor


def reference(input, size=None, scale_factor=None, mode="nearest", align_corners=None) -> torch.Tensor:
    return torch.nn.functional.interpolate(input, size=size, scale_factor=scale_factor, mode=mode,
                                           align_corners=align_corners)


def make_inputs(params, gen, device) -> Call:
    x = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
    kwargs = {k: params[k] for k in ("size", "scale_factor", "align_corners") if k in params}
    kwargs["mode"] = params["interp"]
    return Call((x,), kwargs)


def _out_numel(input, size, scale_factor):
    n, c, h, w = input.shape
    if size is not None:
        oh, ow = (size, size) if isinstance(size, int) else size
    else:
        sh, sw = (scale_factor, scale_factor) if isinstance(scale_factor, (int, float)) else scale_factor
        oh, ow = int(h * sh), int(w * sw)
    return n * c * oh * ow


def _flops(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    return 4.0 * _out_numel(input, size, scale_factor)


def _bytes(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    return float(input.numel() + _out_numel(input, size, scale_factor)) * input.element_size()


def _case(name, kind, shape, interp, mode="standard", **extra):
    return Case(name, kind, {"shape": shape, "interp": interp, "mode": mode, **extra})


TASK = Task(
    entry="interpolate",
    dtypes=("float32",),
    signature=(
        "interpolate(input: torch.Tensor, size: int | tuple[int, int] | None = None, "
        "scale_factor: float | tuple[float, float] | None = None, mode: str = 'nearest', "
        "align_corners: bool | None = None) -> torch.Tensor"
    ),
    description=(
        "Resize a (N, C, H, W) fp32 tensor to (N, C, Ho, Wo), torch.nn.functional.interpolate semantics: Ho, Wo "
        "come from `size`, else floor(H * scale_factor) etc., and the per-axis coordinate scale is (in-1)/(out-1) "
        "with align_corners=True, else 1/scale_factor when scale_factor is given, else in/out. "
        "mode='nearest': src = min(floor(dst * scale), in - 1). mode='bilinear': src = dst * scale with "
        "align_corners, else max((dst + 0.5) * scale - 0.5, 0), blending the two neighbours (upper index "
        "clamped to in - 1). mode='bicubic': src as bilinear but without the clamp at 0, cubic convolution "
        "(A = -0.75) over the 4 neighbours floor(src)-1 .. floor(src)+2, with indices clamped to [0, in - 1]."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        _case("nearest_size8", STANDARD, (2, 3, 4, 4), "nearest", size=(8, 8)),
        _case("bilinear_scale2", STANDARD, (2, 3, 8, 8), "bilinear", scale_factor=2.0),
        _case("bicubic_size16", STANDARD, (2, 3, 8, 8), "bicubic", size=(16, 16)),
        _case("nearest_down", STANDARD, (2, 3, 16, 16), "nearest", size=(8, 4)),
        _case("bilinear_mixed", STANDARD, (2, 3, 10, 12), "bilinear", size=(15, 7)),
        _case("bilinear_align_corners", STANDARD, (2, 3, 7, 9), "bilinear", size=(12, 5), align_corners=True),
        _case("bicubic_scale_pair", STANDARD, (2, 3, 8, 10), "bicubic", scale_factor=(1.5, 0.5)),
        _case("bicubic_align_corners", STANDARD, (2, 3, 8, 8), "bicubic", size=(11, 13), align_corners=True),
        _case("outlier_bicubic", OUTLIER, (2, 3, 16, 16), "bicubic", "outlier", size=(24, 40)),
        _case("outlier_bilinear", OUTLIER, (2, 3, 16, 16), "bilinear", "outlier", size=(40, 9)),
    ],
    # upstream's perf: (2, 3, s, s) upsampled bilinearly to (2s, 2s); larger s keeps an H100 busy
    perf=[
        _case(f"s{s}", PERF, (2, 3, s, s), "bilinear", "uniform", size=(2 * s, 2 * s)) for s in (1024, 2048, 4096)
    ],
    flops=_flops,
    bytes=_bytes,
)
