"""A per-request deadline for the client: one watchdog thread per service that, when a request
runs past its time, calls a function (the client stops the service, which ends a write or read
blocked on its pipes in the caller's thread)."""
from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterator, Optional, Tuple


class Deadline:
    """Arms one deadline at a time (requests are sequential); `expired` is (request, seconds)
    once a request ran past it, else None."""

    def __init__(self, on_expiry: Callable[[], None]) -> None:
        self._on_expiry = on_expiry
        self._cond = threading.Condition()
        self._at: Optional[float] = None
        self._what = ""
        self._seconds = 0.0
        self._stopped = False
        self._thread: Optional[threading.Thread] = None
        self.expired: Optional[Tuple[str, float]] = None

    @contextmanager
    def running(self, what: str, seconds: Optional[float]) -> Iterator[None]:
        """The block runs under a deadline of `seconds` (None: none)."""
        if seconds is None:
            yield
            return
        with self._cond:
            if self._thread is None:
                self._thread = threading.Thread(target=self._watch, name="trace-alloc deadline", daemon=True)
                self._thread.start()
            self._at, self._what, self._seconds = time.monotonic() + seconds, what, seconds
            self._cond.notify()
        try:
            yield
        finally:
            with self._cond:
                self._at = None

    def stop(self) -> None:
        """Ends the watchdog thread (the service is closing)."""
        with self._cond:
            self._stopped = True
            self._cond.notify()

    def _watch(self) -> None:
        with self._cond:
            while not self._stopped:
                if self._at is None:
                    self._cond.wait()
                    continue
                left = self._at - time.monotonic()
                if left > 0:
                    self._cond.wait(left)
                    continue
                self.expired = (self._what, self._seconds)
                self._at = None
                self._on_expiry()
