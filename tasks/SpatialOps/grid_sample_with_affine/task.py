"""SpatialOps/grid_sample_with_affine: F.affine_grid from theta, then F.grid_sample of an fp32 (N, C, H, W) input.

kbx departures: upstream's four cases all used the identity theta (given as int64), which only
reproduce the input; kbx keeps them and adds bilinear cases with random affine theta (rotation,
scale, shift; sampling partly outside the image). Their fp32 atol is 5e-4 (see the tolerance
comment). The perf theta is a random near-identity affine map rather than raw randn, so most
samples fall inside the image.

Version 2: atol 1e-4 -> 5e-4. Version 1's bound was measured on the small cases (inputs up to 64
pixels wide); the perf input is 256 wide, where one ulp of the normalised grid coordinate is
128 * 2^-23 = 1.5e-5 pixels, and randn neighbours differ by up to ~10, so an output moves by up to
~1.6e-4 per ulp (measured by nudging the reference grid one ulp: 1.3e-4 to 1.6e-4 at every perf
shape; four ulps: up to 3.1e-4). Bilinear sampling is continuous, so there is no jump at pixel
boundaries: the error is this coordinate rounding times the image's slope, and an honest kernel
that forms the grid in another order (the expert on the H100: 1.4e-4, 1 of 3.1M elements at
out1024) is that far off. 5e-4 allows a few ulps; sampling bugs (half-pixel shifts, wrong
align_corners, wrong padding) are off by 0.1 or more.
"""

import torch
import torch.nn.functional as F

from kbx.tasks import PERF, STANDARD, OUTLIER, Call, Case, Task, Tolerance
from kbx.tasks.inputs import rand_tensor


def reference(input, theta, size, mode="bilinear", padding_mode="zeros", align_corners=False):
    # theta takes the input's dtype: fp32 in every case (upstream casts to fp32), float64 in the tolerance audit
    grid = F.affine_grid(theta.to(input.dtype), list(size), align_corners=align_corners)
    return F.grid_sample(input, grid, mode=mode, padding_mode=padding_mode, align_corners=align_corners)


def make_inputs(params, gen, device) -> Call:
    x = rand_tensor(params["in_shape"], "float32", params["mode"], gen, device)
    n = params["in_shape"][0]
    if params.get("theta", "identity") == "identity":
        theta = torch.tensor([[[1, 0, 0], [0, 1, 0]]] * n, dtype=torch.int64, device=device)
    else:  # identity plus a random perturbation: rotation/shear/scale up to ~0.3, shift up to ~0.2
        theta = torch.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]] * n, device=device)
        theta = theta + 0.2 * rand_tensor((n, 2, 3), "float32", "standard", gen, device)
    kwargs = {k: params[k] for k in ("mode_", "padding_mode", "align_corners") if k in params}
    if "mode_" in kwargs:
        kwargs["mode"] = kwargs.pop("mode_")
    return Call((x, theta, tuple(params["size"])), kwargs)


def _flops(input, theta, size, mode="bilinear", padding_mode="zeros", align_corners=False):
    n, c, ho, wo = size
    return 10.0 * n * ho * wo + 7.0 * n * c * ho * wo


def _bytes(input, theta, size, mode="bilinear", padding_mode="zeros", align_corners=False):
    n, c, ho, wo = size
    return float((input.numel() + n * c * ho * wo) * input.element_size())


_IDENT = {"in_shape": (1, 3, 64, 64), "size": (1, 3, 64, 64), "mode": "standard"}
_RAND = {"in_shape": (2, 3, 32, 40), "size": (2, 3, 48, 36), "theta": "random"}

TASK = Task(
    entry="grid_sample_with_affine",
    dtypes=("float32", "int64"),
    signature=(
        "grid_sample_with_affine(input: torch.Tensor, theta: torch.Tensor, size: tuple[int, int, int, int], "
        "mode: str = 'bilinear', padding_mode: str = 'zeros', align_corners: bool = False) -> torch.Tensor"
    ),
    description=(
        "Cast theta (N, 2, 3), which may be an integer tensor, to fp32; build the sampling grid "
        "F.affine_grid(theta, size, align_corners) for the output size (N, C, Ho, Wo); and return "
        "F.grid_sample(input, grid, mode, padding_mode, align_corners) for the fp32 input (N, C, H, W): "
        "an fp32 tensor of shape size. Modes 'bilinear' and 'nearest'; padding 'zeros', 'border', 'reflection'."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("identity_defaults", STANDARD, dict(_IDENT)),
        Case("identity_nearest", STANDARD, {**_IDENT, "mode_": "nearest"}),
        Case("identity_reflection", STANDARD, {**_IDENT, "padding_mode": "reflection"}),
        Case("identity_align_corners", STANDARD, {**_IDENT, "align_corners": True}),
        Case("affine_bilinear_zeros", STANDARD, {**_RAND, "mode": "standard"}),
        Case("affine_bilinear_border_align", STANDARD,
             {**_RAND, "mode": "standard", "padding_mode": "border", "align_corners": True}),  # fmt: skip
        Case("affine_bilinear_reflection", STANDARD, {**_RAND, "mode": "standard", "padding_mode": "reflection"}),
        Case("outlier_affine_bilinear", OUTLIER, {**_RAND, "mode": "outlier"}),
    ],
    perf=[
        Case(f"out{s}", PERF, {"in_shape": (1, 3, 256, 256), "size": (1, 3, s, s), "mode": "standard",
                               "theta": "random"})  # fmt: skip
        for s in (1024, 2048, 4096)
    ],
    flops=_flops,
    bytes=_bytes,
    # Sample coordinates are ((g + 1) * W - 1) / 2 with g = theta applied to the base grid in fp32,
    # so even the identity theta lands a few ulps off pixel centres, and an honest kernel that orders
    # these operations differently moves samples by a few ulps of W / 2 * 2^-23 pixels; times the
    # pixel-to-pixel differences of randn images (up to ~10) outputs differ by up to ~1.6e-4 per ulp
    # at the 256-pixel perf input (docstring), over the default 1e-5.
    tolerance=Tolerance(atol={"float32": 5e-4}),
    version=2,
    notes="adds random-theta bilinear cases (upstream: identity theta only); fp32 atol 5e-4; perf theta near identity",
)
