"""Errors that mean "the input is wrong", reported as one line with a non-zero exit.

Every such error is defined here, below everything that raises it, so an entry point can catch
them all (USER_ERRORS) without importing the layers that raise them.
"""

from kbx.core.hardware import HardwareError


class ConfigError(ValueError):
    """A configuration value is invalid; the message names the key and the valid values."""


class MethodError(ValueError):
    """A method cannot run as configured (bad input file, missing setting); raised before any work."""


class TaskError(ValueError):
    """A task definition is malformed, duplicated, or a requested task does not exist."""


class SandboxUnavailable(RuntimeError):
    """The OS cannot provide the sandbox asked for; the message says why and what to do."""


USER_ERRORS = (ConfigError, HardwareError, MethodError, TaskError, SandboxUnavailable)
EXIT_USER_ERROR = 2
