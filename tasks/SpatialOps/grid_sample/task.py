"""SpatialOps/grid_sample: sample an fp32 4-D or 5-D input at normalised grid coordinates (bilinear or nearest).

kbx departures: fp32 atol 1e-4 (see the tolerance comment); kbx adds 4-D cases for the border and
reflection paddings with align_corners, and a grid reaching outside [-1, 1]. Perf inputs are
(16, 3, H, H) for H = 2^9..2^11 with an (H/2, H/2) grid, upstream's top sizes.
"""

import torch
import torch.nn.functional as F

from kbx.tasks import OUTLIER, PERF, STANDARD, Call, Case, Task, Tolerance
from kbx.tasks.inputs import rand_tensor


def reference(input: torch.Tensor, grid: torch.Tensor, mode: str = "bilinear", padding_mode: str = "zeros",
              align_corners: bool = False) -> torch.Tensor:  # fmt: skip
    return F.grid_sample(input, grid, mode=mode, padding_mode=padding_mode, align_corners=align_corners)


def make_inputs(params, gen, device) -> Call:
    x = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
    reach = params.get("reach", 1.0)  # grid uniform in [-reach, reach)
    grid = (rand_tensor(params["grid"], "float32", "uniform", gen, device) * 2.0 - 1.0) * reach
    kwargs = {k: params[k] for k in ("padding_mode", "align_corners") if k in params}
    if "interp" in params:
        kwargs["mode"] = params["interp"]
    return Call((x, grid), kwargs)


def _flops(input, grid, mode="bilinear", padding_mode="zeros", align_corners=False):
    points = grid.numel() // grid.shape[-1]
    return 7.0 * points * input.shape[1]


def _bytes(input, grid, mode="bilinear", padding_mode="zeros", align_corners=False):
    points = grid.numel() // grid.shape[-1]
    out = points * input.shape[1]
    return float((input.numel() + grid.numel() + out) * input.element_size())


def _case(name, kind, shape, grid, mode="uniform", **extra):
    return Case(name, kind, {"shape": shape, "grid": grid, "mode": mode, **extra})


TASK = Task(
    entry="grid_sample",
    dtypes=("float32",),
    signature=(
        "grid_sample(input: torch.Tensor, grid: torch.Tensor, mode: str = 'bilinear', padding_mode: str = 'zeros', "
        "align_corners: bool = False) -> torch.Tensor"
    ),
    description=(
        "torch.nn.functional.grid_sample for fp32 input (N, C, H, W) with grid (N, Ho, Wo, 2), or (N, C, D, H, W) "
        "with grid (N, Do, Ho, Wo, 3); grid's last dim is (x, y[, z]) normalised to [-1, 1], unnormalised as "
        "(g + 1) / 2 * (size - 1) if align_corners else ((g + 1) * size - 1) / 2. mode 'bilinear' (trilinear "
        "in 5-D) or 'nearest' (round half to even); padding_mode 'zeros', 'border' or 'reflection'. Output "
        "(N, C, Ho, Wo) or (N, C, Do, Ho, Wo), fp32."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        _case("bilinear_zeros", STANDARD, (1, 3, 4, 4), (1, 2, 2, 2)),
        _case("nearest_border", STANDARD, (1, 3, 4, 4), (1, 2, 2, 2), interp="nearest", padding_mode="border"),
        _case("trilinear_reflection", STANDARD, (1, 3, 4, 4, 4), (1, 2, 2, 2, 3), padding_mode="reflection"),
        _case("nearest_5d_align", STANDARD, (1, 3, 4, 4, 4), (1, 2, 2, 2, 3), interp="nearest", align_corners=True),
        _case("standard", STANDARD, (2, 3, 32, 32), (2, 16, 16, 2), "standard"),
        _case("outlier", OUTLIER, (2, 3, 32, 32), (2, 16, 16, 2), "outlier"),
        _case("border_align_outside", STANDARD, (2, 4, 20, 28), (2, 12, 10, 2), "standard", padding_mode="border",
              align_corners=True, reach=1.3),  # fmt: skip
        _case("reflection_outside", STANDARD, (2, 4, 20, 28), (2, 12, 10, 2), "standard",
              padding_mode="reflection", reach=1.6),  # fmt: skip
        _case("trilinear_zeros_outside", STANDARD, (2, 2, 6, 7, 8), (2, 3, 4, 5, 3), "standard", reach=1.2),
    ],
    perf=[_case(f"h2^{i}", PERF, (16, 3, 2**i, 2**i), (16, 2 ** (i - 1), 2 ** (i - 1), 2)) for i in (9, 10, 11)],
    flops=_flops,
    bytes=_bytes,
    # Sample coordinates come from fp32 arithmetic on the grid; an honest kernel that orders
    # ((g + 1) * W - 1) / 2 differently moves a sample by ~1e-6 pixels, which on randn images
    # (neighbour differences up to ~5, outliers more) changes outputs by up to ~1e-5, over the default.
    tolerance=Tolerance(atol={"float32": 1e-4}),
    notes="fp32 atol 1e-4; adds border/reflection/align and out-of-range grid cases; perf H = 2^9..2^11",
)
