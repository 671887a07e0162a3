"""Errors that mean "the input is wrong", reported as one line with a non-zero exit."""

from kbx.driver.isolation import SandboxUnavailable
from kbx.core.hardware import HardwareError
from kbx.methods.base import MethodError
from kbx.tasks.registry import TaskError


class ConfigError(ValueError):
    """A configuration value is invalid; the message names the key and the valid values."""


USER_ERRORS = (ConfigError, HardwareError, MethodError, TaskError, SandboxUnavailable)
EXIT_USER_ERROR = 2
