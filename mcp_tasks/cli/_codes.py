"""The exit codes of ``mcp-tasks``, which a script can rely on (``mcp-tasks --help`` lists them)."""

__all__ = [
    "EXIT_CANCELLED",
    "EXIT_ERROR",
    "EXIT_FAILED",
    "EXIT_INPUT",
    "EXIT_INTERRUPTED",
    "EXIT_NO_TASK",
    "EXIT_OK",
    "EXIT_TIMEOUT",
    "EXIT_TOOL_ERROR",
    "EXIT_USAGE",
]

EXIT_OK = 0
EXIT_TOOL_ERROR = 1
EXIT_USAGE = 2
EXIT_FAILED = 3
EXIT_CANCELLED = 4
EXIT_TIMEOUT = 5
EXIT_INPUT = 6
EXIT_ERROR = 7
EXIT_NO_TASK = 8
EXIT_INTERRUPTED = 130
