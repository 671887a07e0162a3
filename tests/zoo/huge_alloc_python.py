"""Allocates a 1 TiB Python bytearray at call time: the worker's address-space cap turns it into
MemoryError, which must read as out_of_memory.

TASK: Math/zoo_scale_add
EXPECT: out_of_memory
DEVICE: cpu
"""


def scale_add(input, other):
    scratch = bytearray(2**40)
    return input * 2 + other + len(scratch)
