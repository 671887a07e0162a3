"""Random/logspace: base ** linspace(start, end, steps), a deterministic fill (no RNG despite the category).

kbx widens the fp32 rtol to 5e-5 (see the tolerance comment) and adds larger fixed-size cases;
upstream checked four tiny vectors only.
"""

import math

import torch

from kbx.tasks import FIXED, PERF, Call, Case, Task, Tolerance
from kbx.tasks.inputs import dtype_of


def reference(start, end, steps, base=10.0, dtype=None, layout=torch.strided, device=None, requires_grad=False):
    return torch.logspace(start, end, steps, base=base, dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)  # fmt: skip


def make_inputs(params, gen, device) -> Call:
    kwargs = {"device": device}
    if "base" in params:
        kwargs["base"] = params["base"]
    if "dtype" in params:
        kwargs["dtype"] = dtype_of(params["dtype"])
    if params.get("requires_grad"):
        kwargs["requires_grad"] = True
    return Call((params["start"], params["end"], params["steps"]), kwargs)


def _flops(start, end, steps, base=10.0, dtype=None, **kwargs):
    return float(steps)


def _bytes(start, end, steps, base=10.0, dtype=None, **kwargs):
    return float(steps * torch.empty((), dtype=dtype or torch.get_default_dtype()).element_size())


TASK = Task(
    entry="logspace",
    dtypes=("float32", "float64"),
    signature=(
        "logspace(start: float, end: float, steps: int, base: float = 10.0, dtype: torch.dtype | None = None, "
        "layout=torch.strided, device=None, requires_grad: bool = False) -> torch.Tensor"
    ),
    description=(
        "Return a new 1-D tensor of `steps` values base ** (start + i * (end - start) / (steps - 1)) for "
        "i = 0 .. steps-1 (both end points included; a single step gives base ** start), as torch.logspace, "
        "with `dtype` (default: torch's default dtype) on `device`, and requires_grad set as asked."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_base10", FIXED, {"start": 1, "end": 3, "steps": 5}),
        Case("fixed_base2", FIXED, {"start": 0, "end": 4, "steps": 5, "base": 2.0}),
        Case("fixed_float64", FIXED, {"start": 1, "end": 2, "steps": 4, "dtype": "float64"}),
        Case("fixed_requires_grad", FIXED, {"start": 1, "end": 3, "steps": 3, "requires_grad": True}),
        Case("fixed_single_step", FIXED, {"start": 2.5, "end": 7.0, "steps": 1}),
        Case("fixed_descending_base_e", FIXED, {"start": 3.0, "end": -2.0, "steps": 1001, "base": math.e}),
        Case("fixed_large_fp32", FIXED, {"start": 0, "end": 10, "steps": 100_003}),
        Case("fixed_large_fp64", FIXED, {"start": -5, "end": 5, "steps": 65_537, "dtype": "float64"}),
    ],
    perf=[Case(f"steps2^{e}", PERF, {"start": 0, "end": 10, "steps": 2**e}) for e in (24, 25, 26, 27)],
    flops=_flops,
    bytes=_bytes,
    # The exponent start + i*step is itself rounded in fp32 (about one ulp of |exponent|, ~1e-6 at
    # 10), and base**x magnifies an exponent error by ln(base)*|x| (~23 for 10**10): two correct
    # fp32 kernels that form the exponent differently (torch evaluates the upper half from the end
    # point) differ by up to ~2e-5 relative.
    tolerance=Tolerance(rtol={"float32": 5e-5}),
    notes="fp32 rtol 5e-5 (exponent rounding magnified by ln(base)*|x|); kbx adds larger and descending cases",
)
