"""Who holds a lease: this machine's boot, this process, and one wait, in one string, so that a
store on this machine can tell at once when the holder's process is gone.
"""

from __future__ import annotations

import os
import socket
import sys
import uuid
from collections.abc import Callable
from functools import lru_cache
from typing import Any

__all__ = ["holder_gone", "machine_id", "new_holder"]


@lru_cache(maxsize=1)
def machine_id() -> str:
    """The current boot of this machine (Linux: its boot id; elsewhere: the host name)."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as file:
            boot = file.read().strip()
        if boot:
            return boot
    except OSError:
        pass
    return socket.gethostname() or "unknown-host"


def new_holder() -> str:
    """A holder name for one wait of this process: ``<machine>/<pid>/<random>``."""
    return f"{machine_id()}/{os.getpid()}/{uuid.uuid4().hex[:12]}"


def _alive(pid: int) -> bool:
    if sys.platform == "win32":
        return _alive_on_windows(pid, *_kernel32())
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: it exists, another user's
        return True
    return True


_QUERY_LIMITED_INFORMATION = 0x1000
_STILL_ACTIVE = 259
_INVALID_PARAMETER = 87  # OpenProcess on a pid no process has


def _kernel32() -> tuple[Any, Callable[[], int]]:
    """Windows' kernel32 with its last-error reader (ctypes; no extra package)."""
    if sys.platform == "win32":
        import ctypes
        from ctypes import wintypes

        kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
        kernel32.OpenProcess.restype = wintypes.HANDLE
        kernel32.OpenProcess.argtypes = (wintypes.DWORD, wintypes.BOOL, wintypes.DWORD)
        kernel32.GetExitCodeProcess.argtypes = (wintypes.HANDLE, ctypes.POINTER(wintypes.DWORD))
        kernel32.CloseHandle.argtypes = (wintypes.HANDLE,)
        return kernel32, ctypes.get_last_error
    raise OSError("kernel32 exists on Windows only")


def _alive_on_windows(pid: int, kernel32: Any, last_error: Callable[[], int]) -> bool:
    """Whether process `pid` runs, asked of Windows: OpenProcess fails with "invalid parameter"
    for a pid no process has, and a process that has exited (a handle someone still holds keeps
    it known) reports an exit code other than STILL_ACTIVE. Anything else, such as access denied,
    counts as alive: then the lease's ttl decides.
    """
    import ctypes

    handle = kernel32.OpenProcess(_QUERY_LIMITED_INFORMATION, False, pid)
    if not handle:
        return last_error() != _INVALID_PARAMETER
    try:
        code = ctypes.c_ulong(0)
        if not kernel32.GetExitCodeProcess(handle, ctypes.byref(code)):
            return True
        return code.value == _STILL_ACTIVE
    finally:
        kernel32.CloseHandle(handle)


def holder_gone(holder: str) -> bool:
    """Whether `holder` names a process of this machine's current boot that no longer runs (a
    holder from elsewhere is never known to be gone: its lease ends with its ttl).
    """
    machine, _, rest = holder.partition("/")
    pid_text, _, _ = rest.partition("/")
    if machine != machine_id() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    return pid != os.getpid() and not _alive(pid)
