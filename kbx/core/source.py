"""Turning a method's raw text into a candidate source file, and static checks on it.

Nothing here executes candidate code: it is only parsed or compiled, in the driver.
The worker decides whether the entry exists, after import, which is what counts.
"""

from __future__ import annotations

import re
import warnings

# Upstream's task files put the reference above and the test harness below a line of this many '#'.
HARNESS_SEPARATOR_LEN = 146
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)```", re.DOTALL)
_OPENING = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*(?:\n|$)")  # a fence never closed: the body runs to the end
CANDIDATE_FILE = "<candidate>"  # the file name candidate code is compiled under in the driver
# What compiling a candidate warns about ("is" with a literal, invalid escapes) is the model's business, shown
# to nobody: the worker that imports the code reports its own output. Only warnings of that file name are muted.
for _category in (SyntaxWarning, DeprecationWarning):
    warnings.filterwarnings("ignore", category=_category, module=re.escape(CANDIDATE_FILE))


def fenced_blocks(text: str) -> tuple[list[tuple[str, str]], bool]:
    """((language, body) of every fenced block in order, whether the text ends inside the last one).

    A block opened and never closed (the answer stopped mid-block, or the model left out the
    closing fence) is a block too: its body runs to the end of the text, without the fence line."""
    blocks, end = [], 0
    for found in _FENCE.finditer(text):
        blocks.append((found.group(1).lower(), found.group(2)))
        end = found.end()
    opened = _OPENING.search(text, end)
    if opened:
        blocks.append((opened.group(1).lower(), text[opened.end():]))
    return blocks, opened is not None


def code_is_cut(text: str) -> bool:
    """Whether an answer that stopped at its token limit stopped inside its code: within a fenced
    block never closed, or in a text with no fence (then the whole text is the code)."""
    blocks, open_at_end = fenced_blocks(text)
    return open_at_end or not blocks


def extract_code(text: str) -> str:
    """The kernel code in a completion or stored prediction.

    Takes the last fenced python block when fences are present (models often write a draft,
    then the final version), else the whole text; then drops everything from upstream's harness
    separator line on, so a stored upstream file contributes only its kernel part.
    """
    blocks, _ = fenced_blocks(text)
    if blocks:
        python = [body for lang, body in blocks if lang in ("python", "py", "")]
        text = (python or [body for _, body in blocks])[-1]
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.strip().startswith("#" * HARNESS_SEPARATOR_LEN):
            lines = lines[:i]
            break
    return "\n".join(lines).strip() + "\n" if any(line.strip() for line in lines) else ""


def entry_names(entry: str) -> tuple[str, str]:
    """Names a submission may define: the task's entry, or upstream's generic `kernel_function`."""
    return (entry, "kernel_function")


def check_syntax(code: str) -> str:
    """'' when the code compiles, else a one-line syntax error.

    Compiles to bytecode (nothing runs) rather than calling `ast.parse`: CPython 3.11's conversion
    of the parse tree to `ast` objects keeps its recursion depth in interpreter-wide state, and
    attempts judged from several threads at once made it fail with "SystemError: AST constructor
    recursion depth mismatch" on valid code (CI, 161 experts). Compiling never builds those objects."""
    try:
        compile(code, CANDIDATE_FILE, "exec", dont_inherit=True)
    except SyntaxError as exc:
        return f"line {exc.lineno}: {exc.msg}"
    except (ValueError, RecursionError, MemoryError) as exc:  # absurd nesting or size
        return f"uncompilable: {type(exc).__name__}: {str(exc)[:200]}"
    return ""
