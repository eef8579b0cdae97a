"""Esc during a live wait: the command leaves the wait and the task runs on (``Detached``).

`Keys` decides what the bytes typed mean (only a lone Esc matters: an arrow key sends ESC [ A,
Alt+x sends ESC x, so an ESC is Esc only when no byte follows it within `ESC_WINDOW`); `EscKey`
is the thin shell: the terminal in cbreak mode (no echo, keys one by one, Ctrl-C still SIGINT), a
thread reading it, and, on Esc, a signal that raises `Detached` in the main thread wherever the
wait is. The terminal's mode is put back on every way out, and for each question (`paused`).
"""

from __future__ import annotations

import os
import select
import signal
import termios
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import IO, Any

from mcp_tasks._threads import start_thread

__all__ = ["ESC_WINDOW", "Detached", "EscKey", "Keys"]

ESC_WINDOW = 0.05
"""Seconds an ESC waits for the rest of an escape sequence before it counts as Esc."""

ESC = 0x1B
SIGNAL = signal.SIGUSR1


class Detached(KeyboardInterrupt):
    """Esc was pressed during the wait: the command leaves it; the task runs on at the server.

    A `KeyboardInterrupt`, so that the library treats the request under way as Ctrl-C does.
    """


class Keys:
    """What the bytes typed during a wait mean: `feed` them one by one; while `waiting`, an ESC
    waits for the rest of its sequence; `quiet` says no byte came in time (True: it was Esc).
    """

    def __init__(self) -> None:
        self._sequence = b""  # an escape sequence begun

    @property
    def waiting(self) -> bool:
        """Whether an escape sequence is under way (the next byte is awaited `ESC_WINDOW`)."""
        return bool(self._sequence)

    def feed(self, byte: int) -> None:
        """One byte typed."""
        sequence = self._sequence
        if not sequence or (sequence == b"\x1b" and byte == ESC):
            self._sequence = b"\x1b" if byte == ESC else b""  # a new ESC (twice: Esc is still pending)
        elif sequence == b"\x1b" and byte in b"[O":
            self._sequence = sequence + bytes([byte])  # CSI or SS3: a key such as an arrow
        elif sequence == b"\x1b" or sequence == b"\x1bO" or 0x40 <= byte <= 0x7E:
            self._sequence = b""  # Alt+key, or the sequence's last byte
        else:
            self._sequence = sequence + bytes([byte])  # a CSI's parameters

    def quiet(self) -> bool:
        """No byte came within `ESC_WINDOW`: whether what was pending is a lone Esc."""
        lone, self._sequence = self._sequence == b"\x1b", b""
        return lone


class EscKey:
    """Esc on the terminal `stdin` raises `Detached` in the main thread while `watching`."""

    def __init__(self, stdin: IO[str]) -> None:
        self._stdin = stdin
        self._cond = threading.Condition()
        self._paused = False
        self._stopped = True
        self._armed = False
        self._saved: list[Any] | None = None
        self._wake: tuple[int, int] | None = None

    def usable(self) -> bool:
        """Whether Esc can be read here: stdin a terminal whose foreground this process is (in the
        background, setting its mode or reading it would stop the process), and the main thread.
        """
        try:
            fd = self._stdin.fileno()
            foreground = self._stdin.isatty() and os.tcgetpgrp(fd) == os.getpgrp()
        except (AttributeError, OSError, ValueError):
            return False
        return foreground and threading.current_thread() is threading.main_thread()

    @contextmanager
    def watching(self) -> Iterator[None]:
        """While the block runs, Esc raises `Detached` in it (if `usable`; else nothing)."""
        if not self.usable():
            yield
            return
        fd = self._stdin.fileno()
        self._saved = termios.tcgetattr(fd)
        previous = signal.signal(SIGNAL, self._on_signal)
        self._wake = os.pipe()
        self._stopped, self._paused, self._armed = False, False, True
        thread: threading.Thread | None = None
        try:
            _cbreak(fd, self._saved)
            thread = start_thread("esc-key", lambda: self._read(fd))
            yield
        finally:
            try:
                self._armed = False  # a signal sent before this is handled as nothing from here on
            finally:
                with self._cond:
                    self._stopped = True
                    self._cond.notify_all()
                os.write(self._wake[1], b"\0")
                if thread is not None:
                    thread.join()
                termios.tcsetattr(fd, termios.TCSANOW, self._saved)
                signal.signal(SIGNAL, previous)
                for end in self._wake:
                    os.close(end)
                self._wake = None

    @contextmanager
    def paused(self) -> Iterator[None]:
        """A question is on the screen: its answer is typed as usual (the terminal's own mode),
        none of it read here.
        """
        with self._cond:
            if self._stopped or self._wake is None or self._saved is None:
                watched = False
            else:
                watched, self._paused = True, True
                os.write(self._wake[1], b"\0")
                termios.tcsetattr(self._stdin.fileno(), termios.TCSANOW, self._saved)
        try:
            yield
        finally:
            if watched:
                with self._cond:
                    if not self._stopped and self._saved is not None:
                        _cbreak(self._stdin.fileno(), self._saved)
                    self._paused = False
                    self._cond.notify_all()

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if self._armed:
            self._armed = False
            raise Detached()

    def _read(self, fd: int) -> None:
        assert self._wake is not None
        wake = self._wake[0]
        keys = Keys()
        while True:
            with self._cond:
                while self._paused and not self._stopped:
                    self._cond.wait()
                if self._stopped:
                    return
            ready, _, _ = select.select([fd, wake], [], [], ESC_WINDOW if keys.waiting else None)
            if wake in ready:
                os.read(wake, 64)
                continue
            with self._cond:
                if self._paused or self._stopped:
                    keys = Keys()  # what was typed before the question is forgotten
                    continue
                if ready:
                    for byte in os.read(fd, 64):
                        keys.feed(byte)
                    continue
                if keys.quiet():
                    self._stopped = True  # one Esc, one signal
                    signal.pthread_kill(threading.main_thread().ident or 0, SIGNAL)
                    return


def _cbreak(fd: int, saved: list[Any]) -> None:
    """Keys one by one, not echoed; Ctrl-C still interrupts (ISIG is kept)."""
    mode = list(saved)
    mode[3] = int(mode[3]) & ~(termios.ECHO | termios.ICANON)
    chars = list(mode[6])
    chars[termios.VMIN], chars[termios.VTIME] = 1, 0
    mode[6] = chars
    termios.tcsetattr(fd, termios.TCSANOW, mode)
