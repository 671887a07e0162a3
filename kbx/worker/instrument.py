"""Run-time instruments installed in the candidate's worker before its code is imported.

- Launch counting: every Triton launch (`kernel[grid](...)`, autotuned or not, compiled or
  interpreted) goes through `KernelInterface.run` of a JITFunction or InterpretedFunction, so
  wrapping those two methods counts real launches. An entry that launches none is not a Triton
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

    def install(self) -> None:
        from triton.runtime.jit import JITFunction

        classes = [JITFunction]
        try:
            from triton.runtime.interpreter import InterpretedFunction

            classes.append(InterpretedFunction)
        except ImportError:  # interpreter module absent in some builds
            pass
        for cls in classes:
            cls.run = self._wrap(cls.run)

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
POISON_LARGE_BYTES = 512 * 2**20  # carved into by allocations above the allocator's 1 MiB small-block limit
POISON_SMALL_BLOCKS = 16  # 1 MiB each, to fill the small-block pool as well
SMALL_BLOCK_BYTES = 2**20


def poison_cuda_allocator(device) -> None:
    """Fill free cached CUDA memory with POISON_BYTE (no-op on CPU, where malloc cannot be steered)."""
    import torch

    if torch.device(device).type != "cuda":
        return
    free, _ = torch.cuda.mem_get_info(device)
    large = torch.empty(min(POISON_LARGE_BYTES, free // 4), dtype=torch.uint8, device=device)
    small = [torch.empty(SMALL_BLOCK_BYTES - 512, dtype=torch.uint8, device=device) for _ in range(POISON_SMALL_BLOCKS)]
    for t in [large, *small]:
        t.fill_(POISON_BYTE)
    del large, small
