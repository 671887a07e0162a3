"""Expert kernel for Loss/mse_loss: elementwise for 'none'; a deterministic two-stage reduction
(per-program partial sums, then one program summing the partials) for 'sum' and 'mean'."""

import torch
import triton
import triton.language as tl

BLOCK = 2048
MAX_PARTIALS = 1024  # stage-1 programs; stage 2 reduces them in one block


@triton.jit
def _sq_diff_kernel(x_ptr, t_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    d = tl.load(x_ptr + offs, mask=mask).to(tl.float32) - tl.load(t_ptr + offs, mask=mask).to(tl.float32)
    tl.store(y_ptr + offs, (d * d).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _partial_kernel(x_ptr, t_ptr, part_ptr, n, n_blocks, BLOCK: tl.constexpr):
    # Program p sums blocks p, p + P, p + 2P, ... into a per-lane fp32 accumulator.
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    n_iter = tl.cdiv(n_blocks - pid, nprog)
    for i in range(0, n_iter):
        blk = (pid + i * nprog).to(tl.int64)
        offs = blk * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        t = tl.load(t_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        d = x - t
        acc += d * d
    tl.store(part_ptr + pid, tl.sum(acc, axis=0))


@triton.jit
def _final_kernel(part_ptr, out_ptr, n_parts, scale, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    p = tl.load(part_ptr + offs, mask=offs < n_parts, other=0.0)
    total = tl.sum(p, axis=0) * scale
    tl.store(out_ptr, total.to(out_ptr.dtype.element_ty))


def mse_loss(input: torch.Tensor, target: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if input.shape != target.shape:
        input, target = torch.broadcast_tensors(input, target)
    x = input.contiguous()
    t = target.contiguous()
    n = x.numel()
    if reduction == "none":
        y = torch.empty_like(x)
        if n > 0:
            _sq_diff_kernel[(triton.cdiv(n, BLOCK),)](x, t, y, n, BLOCK=BLOCK)
        return y
    out = torch.empty((), dtype=x.dtype, device=x.device)
    n_blocks = triton.cdiv(n, BLOCK)
    n_parts = max(1, min(n_blocks, MAX_PARTIALS))
    partials = torch.empty(n_parts, dtype=torch.float32, device=x.device)
    _partial_kernel[(n_parts,)](x, t, partials, n, n_blocks, BLOCK=BLOCK)
    # mean of an empty tensor is NaN in torch; 0 * inf keeps that behaviour
    scale = 1.0 if reduction == "sum" else (1.0 / n if n > 0 else float("nan"))
    _final_kernel[(1,)](partials, out, n_parts, scale, BLOCK=MAX_PARTIALS)
    return out
