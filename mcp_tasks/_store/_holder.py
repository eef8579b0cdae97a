"""Who holds a lease: this machine's boot, this process, and one wait, in one string, so that a
store on this machine can tell at once when the holder's process is gone.
"""

from __future__ import annotations

import os
import socket
import uuid
from functools import lru_cache

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
    if os.name == "nt":  # no cheap check without extra packages: the lease's ttl decides
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: it exists, another user's
        return True
    return True


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
