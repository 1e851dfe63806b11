"""What a program decides for its whole process, decided in one place: the process owner.

The core runs inside programs of two shapes: a command that lives a few seconds (`kubectl aicr`)
and servers that live for months (`aicr-admission`, a dashboard). What is right for the process
as a whole differs between them, so no module of the core decides it for itself; the program
does, once, by installing an owner before any session is made:

    from aicr_core import process_owner

    owner = process_owner.ProcessOwner.server("aicr-dashboard", library_log=handler)
    process_owner.install(owner)          # once, at start; `installed(owner)` for a block (tests)

The owner holds the policy (docs/sessions.md, "The process owner"):

- `prompts_allowed()`: whether a credentials plugin (`interactiveMode`) or a fleet write's confirmation
  (aicr_core.fleet.flags) may ask the person at the terminal; the command line's owner says yes when stdin
  is a terminal, a server's never;
- where the libraries' log records go (the Kubernetes client logs to the root logger): an installed
  owner puts one handler on the root logger, at `install()`, never at a connect. A record logged on
  a thread inside `library_records()` (a session loading its credentials) is collected for that
  block, and the session reports it as its error; any other goes to the owner's `library_log`
  (the webhook's JSON log), or nowhere when it has none (the command line: errors are ours to print);
- `alarm_signal`: whether `Deadline.enforced()` may arm SIGALRM on the main thread (the command line
  only: a server's main thread runs an event loop, where an `Alarm` would land in the loop; its
  sessions end by the deadline's watchdog alone);
- `pauses_gc`: whether `aicr_core.gc_pause.paused_gc()` pauses the collector (the command line only:
  a server's threads overlap, and a collector paused process-wide would grow its heap);
- `quiet_insecure_tls`: urllib3's warning for a cluster with `insecure-skip-tls-verify` silenced,
  as kubectl says nothing of it; one warnings filter added at `install()`, removed at `uninstall()`.

And, whatever the owner, the process's private temporary folder (`temp_folder()`): the Kubernetes
client's key files go there, not to `tempfile.tempdir`, which no module sets.

Without an owner installed (library use, unit tests) `current()` is `DEFAULT`, a server's policy
that changes nothing of the process: no prompt, no handler on the root logger (the host program's
logging gets the libraries' records, and nothing is collected), no SIGALRM, no GC pause, no
warnings filter. A program that wants the command line's behaviour installs its owner.

A leaf of the core: the standard library only, and only its smallest parts (the launcher imports it
before anything else).
"""
from __future__ import annotations

import atexit
import logging
import os
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

# urllib3's words for a request to a cluster whose certificate is not verified (its InsecureRequestWarning),
# matched by text so that installing an owner imports no urllib3 (the CLI's start-up).
INSECURE_TLS_WARNING = "Unverified HTTPS request"
# How long the removal of the temporary folder at exit waits for a key file being written.
TEMP_WRITE_WAIT_SECONDS = 2.0


def _never() -> bool:
    return False


def _stdin_is_a_terminal() -> bool:
    stdin = sys.stdin
    try:
        return stdin is not None and stdin.isatty()
    except (ValueError, OSError):  # closed, or no file
        return False


class ProcessOwner:
    """The policy of one program's process (see the module's docstring)."""

    def __init__(self, name: str, *, prompts: Callable[[], bool] = _never,
                 library_log: logging.Handler | None = None, alarm_signal: bool = False, pauses_gc: bool = False,
                 quiet_insecure_tls: bool = False) -> None:
        self.name = name
        self._prompts = prompts
        self.library_log = library_log
        self.alarm_signal = alarm_signal
        self.pauses_gc = pauses_gc
        self.quiet_insecure_tls = quiet_insecure_tls

    @classmethod
    def command_line(cls, name: str = "kubectl-aicr") -> ProcessOwner:
        """A command's: prompts when stdin is a terminal, library records dropped, SIGALRM, the GC paused."""
        return cls(name, prompts=_stdin_is_a_terminal, alarm_signal=True, pauses_gc=True, quiet_insecure_tls=True)

    @classmethod
    def server(cls, name: str, library_log: logging.Handler | None = None) -> ProcessOwner:
        """A long-lived program's: never a prompt, library records to `library_log`, no SIGALRM, no GC pause."""
        return cls(name, library_log=library_log, quiet_insecure_tls=True)

    def prompts_allowed(self) -> bool:
        """May the core ask the person at the terminal now (a credentials plugin, a fleet write's confirmation)?"""
        return self._prompts()

    def __repr__(self) -> str:
        return f"ProcessOwner({self.name!r})"


DEFAULT = ProcessOwner("library")

_lock = threading.Lock()
_installed: ProcessOwner | None = None
_undo: list[Callable[[], None]] = []  # what install() did to the process, undone in reverse by uninstall()


def current() -> ProcessOwner:
    """The installed owner, else `DEFAULT`."""
    return _installed or DEFAULT


def install(owner: ProcessOwner) -> ProcessOwner:
    """Make `owner` the process's (once: a second install is refused until `uninstall()`).

    The only process-wide changes are made here: one handler on the root logger, and the
    warnings filter of `quiet_insecure_tls`."""
    global _installed
    with _lock:
        if _installed is not None:
            raise RuntimeError(f"the process already has its owner, {_installed!r}; uninstall() it first")
        handler = _LibraryRecords(owner)
        root = logging.getLogger()
        root.addHandler(handler)
        _undo.append(lambda: root.removeHandler(handler))
        if owner.quiet_insecure_tls:
            saved = warnings.catch_warnings()
            saved.__enter__()  # the filters as they were, restored by uninstall()
            warnings.filterwarnings("ignore", message=INSECURE_TLS_WARNING, module="urllib3")
            _undo.append(lambda: saved.__exit__(None, None, None))
        _installed = owner
    return owner


def uninstall() -> None:
    """Undo `install()`: the handler and the filter removed, `DEFAULT` current again (tests, a program's end)."""
    global _installed
    with _lock:
        while _undo:
            _undo.pop()()
        _installed = None


@contextmanager
def installed(owner: ProcessOwner) -> Iterator[ProcessOwner]:
    """`owner` installed for the block."""
    install(owner)
    try:
        yield owner
    finally:
        uninstall()


# -- the libraries' log records ---------------------------------------------------------------------

_collecting = threading.local()  # .lists: the record lists of this thread's library_records() blocks


@contextmanager
def library_records() -> Iterator[list[logging.LogRecord]]:
    """The records (warnings and up) logged on this thread inside the block, instead of the owner's log.

    Collected only under an installed owner (its handler is the one on the root logger); the list
    lives as long as the block, so nothing grows on a thread that never connects again."""
    lists: list[list[logging.LogRecord]] | None = getattr(_collecting, "lists", None)
    if lists is None:
        lists = _collecting.lists = []
    records: list[logging.LogRecord] = []
    lists.append(records)
    try:
        yield records
    finally:
        lists.pop()


class _LibraryRecords(logging.Handler):
    """The owner's one handler on the root logger: a record goes to the innermost `library_records()`
    block of its thread, else to the owner's `library_log`, else nowhere."""

    def __init__(self, owner: ProcessOwner) -> None:
        super().__init__(logging.WARNING)
        self.owner = owner

    def emit(self, record: logging.LogRecord) -> None:
        lists: list[list[logging.LogRecord]] | None = getattr(_collecting, "lists", None)
        if lists:
            lists[-1].append(record)
        elif self.owner.library_log is not None:
            self.owner.library_log.handle(record)


# -- the private temporary folder ------------------------------------------------------------------------

class _TempFolder:
    """`<TMPDIR>/aicr-XXXX/files` (mode 0700), made on first use and removed at exit.

    At exit `files` is first renamed away, so that no later write finds the folder, and then the
    whole `aicr-XXXX` is removed; a write inside `use()` finishes first (for at most
    TEMP_WRITE_WAIT_SECONDS), and `use()` after the removal raises FileNotFoundError, so a worker
    left behind on its daemon thread writes nothing that outlives the process."""

    def __init__(self) -> None:
        self._lock = threading.RLock()  # held by each write, and by the removal
        self._root: str | None = None
        self._removed = False

    @contextmanager
    def use(self) -> Iterator[str]:
        with self._lock:
            if self._removed:
                raise FileNotFoundError("the process's private temporary folder is removed: the process is ending")
            if self._root is None:
                import tempfile

                root = tempfile.mkdtemp(prefix="aicr-")
                os.mkdir(os.path.join(root, "files"), 0o700)
                self._root = root
                atexit.register(self.remove)
            yield os.path.join(self._root, "files")

    def remove(self) -> None:
        held = self._lock.acquire(timeout=TEMP_WRITE_WAIT_SECONDS)
        try:
            root, self._root, self._removed = self._root, None, True
        finally:
            if held:
                self._lock.release()
        if root is None:
            return
        import shutil

        try:
            os.rename(os.path.join(root, "files"), os.path.join(root, "removed"))
        except OSError:
            pass
        shutil.rmtree(root, ignore_errors=True)


_TEMP = _TempFolder()


def temp_folder() -> AbstractContextManager[str]:
    """The process's private folder for temporary files, held for the block (its writes finish before
    the removal at exit); FileNotFoundError once the process is ending."""
    return _TEMP.use()
