"""The cluster's policy file for the webhook: re-read in the background, the engine rebuilt when it changes.

Decisions never wait for the API server: a background thread GETs the
ConfigMap every `interval` seconds (2 by default) and, when its text changed,
builds a new `PolicyEngine` from the policies loaded at start-up. So a change
of the file takes effect within `interval` plus one GET, without a restart.

Failing closed: a file that does not validate, or one the webhook may not
read, makes the engine refuse every decided write, naming the error (exactly
as the CLI does). When the API server cannot be reached, the last file read
stays in force for at most `stale_after` seconds (10 by default); after that,
not knowing the rules must not mean having none: every decided write is
denied until a read succeeds again, and /readyz says why.
"""
from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable

from aicr_core.domain.policy_engine import LoadedPolicies, PolicyEngine
from aicr_core.errors import AicrError, Code

# Reads the file: (text, source), text None when there is no ConfigMap; raises AicrError.
ReadFile = Callable[[], "tuple[str | None, str]"]
Log = Callable[..., None]


class PolicySource:
    def __init__(self, loaded: LoadedPolicies, read: ReadFile, *, interval: float = 2.0, stale_after: float = 10.0,
                 log: Log | None = None, monotonic: Callable[[], float] = time.monotonic) -> None:
        self.loaded, self.read = loaded, read
        self.interval, self.stale_after = interval, stale_after
        self.log = log or (lambda *a, **k: None)
        self.monotonic = monotonic
        self._lock = threading.Lock()
        self._engine: PolicyEngine | None = None
        self._text: str | None = None
        self._refusal: AicrError | None = None  # the file's own verdict: unreadable (403), no policy.yaml key
        self._read_at: float | None = None  # when the last read succeeded (monotonic)
        self._failure = "the policy file has not been read yet"

    def refresh(self) -> None:
        """One read; never raises (the outcome is kept for `engine()`)."""
        try:
            self._refresh()
        except Exception as err:  # noqa: BLE001 - a bug must not end the refresh thread; stale_after then refuses
            self._read_failed(f"{type(err).__name__}: {err}")

    def _read_failed(self, why: str) -> None:
        with self._lock:
            was, self._failure = self._failure, why
        if was != why:
            self.log("cannot read the policy file", level="error", error=why)

    def _refresh(self) -> None:
        try:
            text, source = self.read()
        except AicrError as err:
            if err.code == Code.POLICY_ERROR:  # a definite answer about the file: it refuses, now
                with self._lock:
                    changed = self._refusal is None or self._refusal.message != err.message
                    self._refusal, self._engine, self._text = err, None, None
                    self._read_at, self._failure = self.monotonic(), ""
                if changed:
                    self.log("policy file refuses every write", level="error", error=_words(err))
                return
            self._read_failed(err.message)
            return
        with self._lock:
            unchanged = self._engine is not None and text == self._text and self._engine.source == source
        engine = None if unchanged else PolicyEngine.build(self.loaded, text, source)
        with self._lock:
            if engine is not None:
                self._engine, self._text = engine, text
            self._refusal, self._read_at, self._failure = None, self.monotonic(), ""
        if engine is not None:
            problem = engine.errors()
            self.log("policy file loaded", source=source, found=text is not None, digest=engine.digest,
                     active=[s.name for s in engine.active()], error=_words(problem) if problem else None)

    def engine(self) -> PolicyEngine | AicrError:
        """The engine to decide with, or why every decided write is denied."""
        with self._lock:
            read_at, failure = self._read_at, self._failure
            if read_at is None:
                return AicrError(Code.POLICY_ERROR, f"cannot read the policy file ({failure}); refusing (fail closed)")
            age = self.monotonic() - read_at
            if age > self.stale_after:
                return AicrError(Code.POLICY_ERROR, f"the policy file could not be read for {age:.0f}s ({failure}); "
                                 "refusing (fail closed)")
            if self._refusal is not None:
                return self._refusal
            assert self._engine is not None
            return self._engine

    def health(self) -> tuple[bool, float]:
        """For the metrics: (the last read succeeded and its file is in force, seconds since the last good read)."""
        with self._lock:
            read_at, failure, refusal, engine = self._read_at, self._failure, self._refusal, self._engine
        age = math.inf if read_at is None else self.monotonic() - read_at
        usable = engine is not None and engine.errors() is None
        return (not failure and refusal is None and usable and age <= self.stale_after), age

    def state(self) -> str:
        """In words, for /readyz: the file in force, or why every decided write is denied."""
        engine = self.engine()
        if isinstance(engine, AicrError):
            return f"denying every decided write: {_words(engine)}"
        problem = engine.errors()
        if problem is not None:
            return f"denying every decided write: {_words(problem)} (file {engine.digest})"
        found = f"{engine.source} ({engine.digest})" if engine.digest else f"no {engine.source}"
        return f"deciding with {found}; active policies: {', '.join(s.name for s in engine.active()) or 'none'}"

    def run(self, stop: threading.Event) -> None:
        """Refresh every `interval` seconds until `stop` is set (the background thread's body)."""
        while not stop.wait(self.interval):
            self.refresh()

    def start(self, stop: threading.Event) -> threading.Thread:
        self.refresh()
        thread = threading.Thread(target=self.run, args=(stop,), name="policy-file", daemon=True)
        thread.start()
        return thread


def _words(err: AicrError) -> str:
    return err.message + (": " + "; ".join(err.details) if err.details else "")
