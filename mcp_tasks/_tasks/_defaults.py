"""The waits' defaults, in seconds: here alone, so the command's help can show them without loading
the tasks code.
"""

__all__ = ["CANCEL_BUDGET", "DEFAULT_MIN_POLL_INTERVAL", "DEFAULT_POLL_INTERVAL", "DEFAULT_WAIT_TIMEOUT"]

DEFAULT_WAIT_TIMEOUT = 60.0
DEFAULT_POLL_INTERVAL = 1.0
DEFAULT_MIN_POLL_INTERVAL = 0.05
CANCEL_BUDGET = 0.25
"""Seconds that ``cancel_on_timeout`` may spend after the wait's timeout to send tasks/cancel."""
