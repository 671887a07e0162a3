"""What crosses the process boundary: every message, command, file name and mode that the driver
and the sandbox side (a candidate's worker, the zygote, the judge) exchange.

Both sides import this module and nothing else of each other, so a reader sees the whole protocol
here and a grep for a name finds both ends. Messages are JSON lines; the enums are `str`, so they
compare equal to what comes off the wire and serialise as their values.
"""

import enum


class Event(enum.StrEnum):
    """`event` of a message the driver receives from a worker (relayed by the zygote) or the zygote."""

    # A worker, in order. What comes before CANDIDATE was written by kbx's code alone.
    HARNESS_ERROR = "harness_error"  # kbx's own set-up failed
    READY = "ready"  # locked down, waiting for its turn on the GPU
    CANDIDATE = "candidate"  # inputs made; the candidate is about to be imported
    CHECKED = "checked"  # the correctness cases ran; outputs saved (OUTPUTS_FILE)
    PREPARED = "prepared"  # a perf shape is ready to be timed, with its estimate
    MEASURED = "measured"  # that shape was timed in its exclusive window
    TIMED = "timed"  # every perf shape is done
    SAVED = "saved"  # the last timed outputs are saved (PERF_OUTPUTS_FILE)
    BORROWED = "borrowed"  # at any time after CANDIDATE: it reached for kbx's own answers (kbx.sandbox.answers)
    THREADS = "threads"  # after the import and after a case: the candidate's own threads alive (`names`), when changed
    # The zygote, about its children and itself.
    SPAWNED = "spawned"
    EXIT = "exit"  # a child exited (its code and signal)
    FROZEN = "frozen"  # every child's process tree is stopped
    TREES = "trees"  # every child's process tree (`trees`: job id -> pids, the child first), as the zygote sees it
    GARBLED = "garbled"  # a line on a child's result pipe was not JSON
    # Made up by the driver itself, never sent.
    TIMEOUT = "timeout"  # no event within the stage's limit
    ZYGOTE_DIED = "zygote_died"  # the zygote's pipe closed


class Command(enum.StrEnum):
    """A line the driver writes to a worker's control pipe (through the zygote's SEND)."""

    CHECK = "check"  # run the correctness cases now (the GPU has room)
    TIME = "time"  # go on to the perf shapes
    MEASURE = "measure"  # the exclusive window for the prepared shape has begun
    EXIT = "exit"  # the attempt is over


class ZygoteOp(enum.StrEnum):
    """`op` of a request to the zygote (kbx.sandbox.zygote lists their fields)."""

    SPAWN = "spawn"
    SEND = "send"
    KILL = "kill"
    SIGNAL = "signal"
    FREEZE = "freeze"
    RELEASE = "release"
    THAW = "thaw"
    TREES = "trees"


class JudgeOp(enum.StrEnum):
    """`op` of a request to a judge (kbx.sandbox.judge lists their fields and answers)."""

    PING = "ping"
    LOAD = "load"
    COMPARE = "compare"
    COMPARE_PERF = "compare_perf"
    BASELINE_PREPARE = "baseline_prepare"
    BASELINE_MEASURE = "baseline_measure"
    QUIET = "quiet"


STAGE_RAN = "ran"  # a CHECKED event's stage_status when the cases ran (otherwise a Status value)

# Files in an attempt's job directory.
CANDIDATE_FILE = "candidate.py"
OUTPUTS_FILE = "outputs.pt"
PERF_OUTPUTS_FILE = "perf_outputs.pt"
STDOUT_FILE = "stdout.txt"
STDERR_FILE = "stderr.txt"

# eval.sandbox: the operating system's sandbox around each attempt (kbx.sandbox.namespaces).
SANDBOX_NAMESPACES = "namespaces"
SANDBOX_NONE = "none"  # candidates run without it (every record says so)
SANDBOX_MODES = (SANDBOX_NAMESPACES, SANDBOX_NONE)
SANDBOX_ENV = "KBX_SANDBOX"  # tells the zygote which mode to fork its workers for
INTERPRETER_ENV = "TRITON_INTERPRET"  # "1" on the CPU: candidates run on Triton's interpreter

# Modules the driver starts as processes.
ZYGOTE_MODULE = "kbx.sandbox.zygote"
PROBE_MODULE = "kbx.sandbox.namespaces"  # `--gpu`: can this host give a worker the sandbox? (kbx.driver.isolation)
JUDGE_MODULE = "kbx.sandbox.judge"
