"""The first code of the `kubectl-aicr` executable: a Ctrl-C at any moment is one line and exit 130.

Importing the application (cliff, stevedore, the commands' modules) takes
most of a start. A Ctrl-C then used to end in Python's traceback of whatever
was being imported, and an exit by the signal (-2). So this module, which
imports nothing but the standard library's smallest parts (and two leaves of
the core that import no more: `process_owner`, `plugin_folders`), takes SIGINT
first: until the application is imported, a Ctrl-C prints
`error: [INTERRUPTED] interrupted` and exits 130 at once (nothing needs
cleaning up yet: no file is written while modules import). From then on it
is KeyboardInterrupt, which the application reports the same way after its
cleanups. Once the command is over, a late Ctrl-C is ignored, so that the
interpreter's teardown never turns a finished command into a traceback. The
process then ends without that teardown (`process_exit`: the `atexit`
functions still run). While the application is imported, the cyclic
garbage collector is off.

It installs the command line's process owner (aicr_core.process_owner:
prompts when stdin is a terminal, SIGALRM on the main thread, the collector
paused for large lists, library records kept off stderr) before the
application is imported: nothing the command runs finds another.

Only the few milliseconds before Python runs any of our code (its own
start-up and `site`) remain the interpreter's: a Ctrl-C then ends it as
Python does.
"""
from __future__ import annotations

import gc
import os
import signal
from types import FrameType

INTERRUPTED = b"error: [INTERRUPTED] interrupted\n"
EXIT_INTERRUPTED = 130


def _interrupted_while_starting(_signum: int, _frame: FrameType | None) -> None:
    os.write(2, INTERRUPTED)
    os._exit(EXIT_INTERRUPTED)


def console_script() -> None:
    ignored = signal.getsignal(signal.SIGINT) is signal.SIG_IGN  # started with Ctrl-C ignored (nohup, `&`)
    if not ignored:
        signal.signal(signal.SIGINT, _interrupted_while_starting)
    try:
        # The application's import (cliff, stevedore, our modules) makes tens of thousands of objects that
        # live as long as the process and form no garbage: the cyclic collector, which would walk them again
        # and again (docs/performance.md, "What the code's shape saves"), is off meanwhile, and then told to
        # leave them alone.
        gc.disable()
        from aicr_core import plugin_folders, process_owner

        process_owner.install(process_owner.ProcessOwner.command_line())
        plugin_folders.add_to_sys_path()  # before stevedore reads the entry points of sys.path
        from aicr_core.framework import app

        gc.freeze()
        gc.enable()
        if not ignored:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        code = app.console_main()
    except KeyboardInterrupt:  # between the handlers, or inside the application's own error handling
        os.write(2, INTERRUPTED)
        code = EXIT_INTERRUPTED
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    from aicr_core.framework.process_exit import exit_without_teardown

    exit_without_teardown(code)
