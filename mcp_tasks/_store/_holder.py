"""Who holds a lease: this machine's boot, the process's PID namespace, the process (its pid and
when it started) and one wait, in one string, so that a store on this machine can tell at once
when the holder's process is gone. Processes in another PID namespace (another container sharing
the file) see other pids: their holders are never taken for gone, only their ttl frees them; and
a pid used again by a later process is told apart by its start time.
"""

from __future__ import annotations

import os
import socket
import sys
import uuid
from collections.abc import Callable
from functools import lru_cache
from typing import Any

__all__ = ["holder_gone", "machine_id", "new_holder", "pid_namespace"]


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


@lru_cache(maxsize=1)
def pid_namespace() -> str:
    """The PID namespace of this process (Linux: the inode of ``/proc/self/ns/pid``; elsewhere ``-``)."""
    try:
        link = os.readlink("/proc/self/ns/pid")  # "pid:[4026531836]"
    except OSError:
        return "-"
    inode = link.partition("[")[2].rstrip("]")
    return inode if inode.isdigit() else "-"


@lru_cache(maxsize=4)
def _proc_is_ours(pid: int) -> bool:
    """Whether /proc shows this PID namespace's pids (not so in a namespace without its own /proc
    mount): only then do its entries tell the start times of the pids this process sees.
    """
    try:
        with open("/proc/self/stat", encoding="ascii") as file:
            return file.read().split(" ", 1)[0] == str(pid)
    except OSError:
        return False


def _started(pid: int) -> str | None:
    """When process `pid` started (clock ticks since boot, from /proc): "" when no such process
    runs, None when this cannot be told.
    """
    if not _proc_is_ours(os.getpid()):
        return None
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as file:
            fields = file.read().rpartition(")")[2].split()
    except FileNotFoundError:
        return ""
    except OSError:
        return None
    return fields[19] if len(fields) > 19 and fields[19].isdigit() else None


@lru_cache(maxsize=4)
def _own_start(pid: int) -> str:
    return _started(pid) or "0"


def new_holder() -> str:
    """A holder name for one wait of this process: ``<machine>/<pid namespace>/<pid>-<start
    time>/<random>`` (start time 0 where it cannot be told).
    """
    pid = os.getpid()
    return f"{machine_id()}/{pid_namespace()}/{pid}-{_own_start(pid)}/{uuid.uuid4().hex[:12]}"


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
    """Whether `holder` names a process of this machine's current boot and PID namespace that no
    longer runs, or whose pid a later process has (a holder from elsewhere, another namespace or
    an older mcp_tasks is never known to be gone: its lease ends with its ttl).
    """
    parts = holder.split("/")
    if len(parts) != 4 or parts[0] != machine_id() or parts[1] != pid_namespace():
        return False
    pid_text, _, start = parts[2].partition("-")
    if not pid_text.isdigit() or not start.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return start not in ("0", _own_start(pid))  # an earlier process that had this pid
    now = _started(pid) if start != "0" else None
    if now is None:  # start times unknown here: whether the pid runs decides
        return not _alive(pid)
    return now != start


if hasattr(os, "register_at_fork"):  # a child forked after unshare(CLONE_NEWPID) is in another namespace
    os.register_at_fork(after_in_child=pid_namespace.cache_clear)
