"""Expert kernel for Random/rand: Philox uniforms from tl.rand4x, seeded from the given generator.

One 63-bit seed is drawn from `generator` (or torch's default CPU generator when None) with
torch.randint, which advances that generator; the kernel then fills the tensor with
tl.rand4x(seed, counter), four uniforms per Philox evaluation. Reduced-precision dtypes are
scaled just below 1 so rounding cannot produce 1.0.
"""

import math

import torch
import triton
import triton.language as tl

BLOCK = 4096


@triton.jit(do_not_specialize=["seed"])  # a new seed per call: one compiled variant
def _rand_kernel(out_ptr, n, seed, TOP: tl.constexpr, BLOCK: tl.constexpr):
    # one Philox evaluation yields four uniforms: fill four consecutive quarter-blocks with them
    Q: tl.constexpr = BLOCK // 4
    base = tl.program_id(0).to(tl.int64) * BLOCK
    ctr = tl.program_id(0).to(tl.int64) * Q + tl.arange(0, Q)
    u0, u1, u2, u3 = tl.rand4x(seed, ctr)  # fp32 in [0, 1)
    i = base + tl.arange(0, Q)
    _store(out_ptr, i, u0, n, TOP)
    _store(out_ptr, i + Q, u1, n, TOP)
    _store(out_ptr, i + 2 * Q, u2, n, TOP)
    _store(out_ptr, i + 3 * Q, u3, n, TOP)


@triton.jit
def _store(out_ptr, offs, u, n, TOP: tl.constexpr):
    if TOP != 1.0:
        u = u * TOP
    tl.store(out_ptr + offs, u.to(out_ptr.dtype.element_ty), mask=offs < n)


# largest multiplier keeping round-to-nearest below 1.0 in each narrow dtype
_TOP = {torch.float16: 1.0 - 2.0**-11, torch.bfloat16: 1.0 - 2.0**-8}


def rand(*size, generator=None, out=None, dtype=None, layout=torch.strided, device=None,
         requires_grad=False, pin_memory=False):  # fmt: skip
    if len(size) == 1 and isinstance(size[0], (tuple, list, torch.Size)):
        size = tuple(size[0])
    dtype = dtype or (out.dtype if out is not None else torch.get_default_dtype())
    if device is None:
        device = out.device if out is not None else (generator.device if generator is not None else "cpu")
    if generator is not None:
        seed = int(torch.randint(0, 2**62, (1,), generator=generator, device=generator.device).item())
    else:
        seed = int(torch.randint(0, 2**62, (1,)).item())
    result = torch.empty(size, dtype=dtype, device=device)
    n = math.prod(size)
    if n:
        _rand_kernel[(triton.cdiv(n, BLOCK),)](result, n, seed, TOP=_TOP.get(dtype, 1.0), BLOCK=BLOCK)
    if out is not None:
        out.resize_(size).copy_(result)
        result = out
    if requires_grad:
        result.requires_grad_(True)
    return result
