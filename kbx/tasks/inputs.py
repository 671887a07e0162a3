"""Seeded input builders shared by all tasks.

Every draw goes through an explicit `torch.Generator` created on the target device, so the
candidate's worker and the trusted judge regenerate bit-identical inputs from the same seed
without ever exchanging them.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

# Upstream's most common outlier setting: about one element in a thousand replaced by a
# normal draw scaled by ten.
OUTLIER_PROB = 1e-3
OUTLIER_SCALE = 10.0


def dtype_of(name: str) -> torch.dtype:
    """torch dtype from its short name ("float32", "bfloat16", "int64", ...)."""
    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"unknown dtype {name!r}")
    return dtype


def tensor_dtypes(call) -> list[str]:
    """The short names of the dtypes of a Call's tensor arguments (in lists and tuples too), sorted:
    what a shape's compute limit is reckoned on (kbx.core.roofline.compute_limit)."""
    found, todo = set(), [*call.args, *call.kwargs.values()]
    while todo:
        value = todo.pop()
        if isinstance(value, torch.Tensor):
            found.add(str(value.dtype).removeprefix("torch."))
        elif isinstance(value, (list, tuple)):
            todo.extend(value)
    return sorted(found)


def make_generator(seed: int, device: str) -> torch.Generator:
    gen = torch.Generator(device=device)
    gen.manual_seed(int(seed))
    return gen


def rand_tensor(
    shape: Sequence[int],
    dtype: str,
    mode: str,
    gen: torch.Generator,
    device: str,
    outlier_prob: float = OUTLIER_PROB,
    outlier_scale: float = OUTLIER_SCALE,
) -> torch.Tensor:
    """A float tensor drawn in fp32 then cast: 'standard' (randn), 'uniform' ([0, 1)) or 'outlier'.

    'outlier' is randn with each element, with probability `outlier_prob`, replaced by a
    randn draw times `outlier_scale`: the rare large values that expose overflow, bad
    max-subtraction in softmax-like ops, and fp16 range problems.
    """
    shape = tuple(int(s) for s in shape)
    if mode == "uniform":
        x = torch.rand(shape, generator=gen, device=device)
    elif mode in ("standard", "outlier"):
        x = torch.randn(shape, generator=gen, device=device)
        if mode == "outlier":
            mask = torch.rand(shape, generator=gen, device=device) < outlier_prob
            big = torch.randn(shape, generator=gen, device=device) * outlier_scale
            x = torch.where(mask, big, x)
    else:
        raise ValueError(f"unknown input mode {mode!r}; expected standard, outlier or uniform")
    return x.to(dtype_of(dtype))


def rand_int(
    shape: Sequence[int], low: int, high: int, gen: torch.Generator, device: str, dtype: str = "int64"
) -> torch.Tensor:
    """Integers uniform in [low, high)."""
    shape = tuple(int(s) for s in shape)
    return torch.randint(low, high, shape, generator=gen, device=device, dtype=dtype_of(dtype))


def rand_bool(shape: Sequence[int], gen: torch.Generator, device: str) -> torch.Tensor:
    return rand_int(shape, 0, 2, gen, device).bool()


def literal(values, dtype: str, device: str) -> torch.Tensor:
    """A fixed tensor written out in the task file."""
    return torch.tensor(values, dtype=dtype_of(dtype), device=device)


def numel(shape: Sequence[int]) -> int:
    n = 1
    for s in shape:
        n *= int(s)
    return n
