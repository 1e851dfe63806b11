"""A command's process ends as Python's exit would, without the teardown (aicr_core/framework/process_exit.py)."""
from __future__ import annotations

import subprocess
import sys
import textwrap

from testfixtures import compare

PROGRAM = """
import atexit, sys, threading, time
from aicr_core.framework.process_exit import exit_without_teardown

class Freed:
    def __del__(self):
        sys.__stderr__.write("freed")  # only Python's teardown frees a module's objects

kept = Freed()
atexit.register(lambda: print("atexit ran", end=""))  # Python prints it before its flush
sys.stdout.write("buffered, no newline; ")
if "thread" in sys.argv:
    def late():
        time.sleep(0.3)
        print("thread finished;", end=" ")
    threading.Thread(target=late).start()  # not a daemon: Python's exit waits for it
if "unflushable" in sys.argv:
    class Unflushable:
        def write(self, text): return len(text)
        def flush(self): raise OSError(32, "Broken pipe")
    sys.stdout = Unflushable()
if "daemon" in sys.argv:
    threading.Thread(target=time.sleep, args=(60,), daemon=True).start()  # never waited for
exit_without_teardown(3)
"""


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(PROGRAM), *args], capture_output=True,
                          text=True, timeout=30)


def test_atexit_functions_run_and_output_is_flushed_but_nothing_is_freed() -> None:
    proc = run()
    compare((proc.returncode, proc.stdout, proc.stderr),
            expected=(3, "buffered, no newline; atexit ran", ""))


def test_a_daemon_thread_does_not_hold_the_exit() -> None:
    proc = run("daemon")
    compare((proc.returncode, proc.stdout), expected=(3, "buffered, no newline; atexit ran"))


def test_a_thread_python_would_wait_for_means_pythons_own_exit() -> None:
    proc = run("thread")
    compare((proc.returncode, proc.stdout, proc.stderr),
            expected=(3, "buffered, no newline; thread finished; atexit ran", "freed"))


def test_an_output_that_cannot_be_flushed_means_pythons_own_exit() -> None:
    proc = run("unflushable")  # Python's exit flushes it again, fails and says so: exit 120, as always
    compare(proc.returncode, expected=120)
    assert proc.stderr.endswith("freed"), proc.stderr
    assert "BrokenPipeError" in proc.stderr or "Broken pipe" in proc.stderr, proc.stderr
