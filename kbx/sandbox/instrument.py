"""Run-time instruments installed in the candidate's worker before its code is imported.

- Launch counting: every Triton launch (`kernel[grid](...)`, autotuned or not, compiled or
  interpreted) goes through `KernelInterface.run` of a JITFunction or InterpretedFunction, and
  every kernel torch.compile generates through Inductor's `CachingAutotuner.run`, so wrapping
  those methods counts real launches. An entry that launches none is not a Triton
  kernel, whatever its source says.
- Ghost mode: the same wrapper can turn every launch into a no-op. If the entry's output does not
  change, the Triton kernel was a decoy and the result came from somewhere else.
- Poisoning: fill the CUDA caching allocator's free memory with 0xFF bytes (NaN for floats, -1 for
  integers) so an output buffer the kernel never wrote is visible instead of reading as zeros.
"""

from __future__ import annotations


class LaunchCounter:
    def __init__(self) -> None:
        self.launches = 0
        self.ghost = False
        self.wrapped: set[type] = set()

    def install(self) -> None:
        """Wrap every launch path loaded so far; called again before each case, because Inductor's
        launcher module is imported only once a candidate calls torch.compile (importing it up
        front would initialise CUDA in the zygote, which no forked child could then use)."""
        from triton.runtime.jit import JITFunction

        classes = [JITFunction]
        try:
            from triton.runtime.interpreter import InterpretedFunction

            classes.append(InterpretedFunction)
        except ImportError:  # interpreter module absent in some builds
            pass
        import sys

        inductor = sys.modules.get("torch._inductor.runtime.triton_heuristics")
        if inductor is not None:  # torch.compile's kernels launch through its autotuner, not JITFunction
            classes.append(inductor.CachingAutotuner)
        for cls in classes:
            if cls not in self.wrapped:
                cls.run = self._wrap(cls.run)
                self.wrapped.add(cls)

    def _wrap(self, original):
        counter = self

        def run(fn_self, *args, **kwargs):
            if kwargs.get("warmup"):
                return original(fn_self, *args, **kwargs)
            if counter.ghost:
                counter.launches += 1
                return None
            result = original(fn_self, *args, **kwargs)
            counter.launches += 1  # only a launch that went through counts; one that raised computed nothing
            return result

        run.__wrapped__ = original
        return run


# The poison byte pattern: 0xFF.. is a NaN in every IEEE float width and -1 in every signed int.
POISON_BYTE = 0xFF
POISON_LARGE_MAX_BYTES = 2**30  # one block that later large allocations are carved from
POISON_FREE_SHARE = 16  # ...but never more than this fraction of free memory (a dozen workers share the GPU)
POISON_SMALL_BLOCKS = 32  # the allocator's small pool serves requests under 1 MiB from 2 MiB segments
SMALL_BLOCK_BYTES = 2**19
SMALL_REQUEST_MAX_BYTES = 2**20 - 512  # the largest request the small pool serves (its blocks are 512-byte multiples)
POISON_CACHED_MAX_BYTES = 2**32  # cached free blocks filled per case, at most: milliseconds of memset
POISON_CACHED_ROUNDS = 3  # snapshots taken again: a piece of a split block may have gone to another request


def poison_cuda_allocator(device) -> None:
    """Make fresh CUDA allocations come from memory filled with POISON_BYTE.

    The cache is emptied first, so the poisoned block is the only cached large block and later
    allocations that fit are carved from it instead of reusing a block that still holds an
    earlier, correct output. Segments that still hold live tensors (the task's inputs) cannot be
    released, and their free blocks are the first a small request gets, so those are filled too
    (`_hold_cached_free_blocks`). No-op on CPU (see `poison_like` for what works there).
    """
    import torch

    if torch.device(device).type != "cuda":
        return
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    cached = _hold_cached_free_blocks(device)
    free, _ = torch.cuda.mem_get_info(device)
    large = torch.empty(min(POISON_LARGE_MAX_BYTES, free // POISON_FREE_SHARE), dtype=torch.uint8, device=device)
    small = [torch.empty(SMALL_BLOCK_BYTES, dtype=torch.uint8, device=device) for _ in range(POISON_SMALL_BLOCKS)]
    for t in [*cached, large, *small]:
        t.fill_(POISON_BYTE)
    del cached, large, small


def _hold_cached_free_blocks(device) -> list:
    """Tensors that take every free block the caching allocator keeps on this stream, each exactly.

    A GEAK `fused_add_mean` kernel made its scalar argument a one-element tensor and read three
    elements from it: the 512-byte block it got was carved from a segment holding the task's
    inputs, whose free part still held an earlier case's [0.5, 0.5, 0.5], so it passed on an H100
    where upstream failed it. A request the size of a free block gets that block (best fit), so
    holding one tensor per free block, then filling and freeing them, leaves no free byte unpoisoned.
    """
    import torch

    index = torch.device(device).index
    index = torch.cuda.current_device() if index is None else index
    stream = torch.cuda.current_stream(device).cuda_stream
    held, total = [], 0
    for _ in range(POISON_CACHED_ROUNDS):
        sizes = cached_fill_sizes(torch.cuda.memory_snapshot(), index, stream)
        if not sizes:
            break
        for size in sizes:
            if total + size > POISON_CACHED_MAX_BYTES:
                return held
            held.append(torch.empty(size, dtype=torch.uint8, device=device))
            total += size
    return held


def cached_fill_sizes(segments: list[dict], device_index: int, stream: int) -> list[int]:
    """The request sizes that take each free block of `torch.cuda.memory_snapshot()` segments on
    this device and stream. A small-pool block over SMALL_REQUEST_MAX_BYTES is asked for in pieces:
    a larger request would go to the large pool."""
    sizes = []
    for seg in segments:
        if seg.get("device") != device_index or seg.get("stream") != stream:
            continue
        small = seg.get("segment_type") == "small"
        for block in seg.get("blocks", []):
            if block.get("state") != "inactive":
                continue
            size = int(block["size"])
            while small and size > SMALL_REQUEST_MAX_BYTES:
                sizes.append(SMALL_REQUEST_MAX_BYTES)
                size -= SMALL_REQUEST_MAX_BYTES
            if size:
                sizes.append(size)
    return sizes


def poison_like(value, device) -> None:
    """Allocate on `device`, poison and free buffers of the sizes in `value` (an output structure).

    Any allocator (CUDA caching, glibc malloc) hands a same-sized request the block just freed,
    so the next call's outputs start out poisoned instead of holding this output's values.
    """
    import torch

    tensors = []

    def visit(v):
        if isinstance(v, torch.Tensor):
            if v.numel():
                tensors.append(torch.empty(v.shape, dtype=v.dtype, device=device).view(-1).view(torch.uint8))
        elif isinstance(v, (list, tuple)):
            for x in v:
                visit(x)
        elif isinstance(v, dict):
            for x in v.values():
                visit(x)

    visit(value)
    for t in tensors:
        t.fill_(POISON_BYTE)
    del tensors
