"""This process's temporary files in a private folder of its own, removed at exit whatever a thread still does.

The official client writes kubeconfig key data (CA, client certificate, client key) to temporary
files and removes those it knows of at exit. A fleet worker left behind on its daemon thread (its
cluster's deadline passed) may go on and write one after that clean-up ran. So the process's
temporary files go to `<TMPDIR>/aicr-XXXX/files` (mode 0700): at exit `files` is first renamed
away, so that no later write finds the folder, and then the whole `aicr-XXXX` is removed.

The client keeps one file per content (its `_temp_files`), but publishes a file's name before it
has written the content: a fleet's sessions with one client certificate, set up at once, took the
name of a file still empty and failed with OpenSSL's "PEM lib". So the client's writer runs under
a lock here: a name is seen only once its file is whole.
"""
from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
from collections.abc import Callable
from typing import Any

_lock = threading.Lock()
_files_lock = threading.Lock()
_root: str | None = None


def use() -> None:
    """From now on `tempfile` puts this process's files in its private folder (made once)."""
    global _root
    with _lock:
        if _root is not None:
            return
        root = tempfile.mkdtemp(prefix="aicr-")
        files = os.path.join(root, "files")
        os.mkdir(files, 0o700)
        tempfile.tempdir = files
        _root = root
        atexit.register(remove)
        _serialize_client_files()


def _serialize_client_files() -> None:
    """The client's temporary-file writer, one call at a time (see the module's docstring)."""
    from kubernetes.config import kube_config

    unsafe: Callable[..., str] = kube_config._create_temp_file_with_content

    def create_whole(*args: Any, **kwargs: Any) -> str:
        with _files_lock:
            return unsafe(*args, **kwargs)

    kube_config._create_temp_file_with_content = create_whole


def remove() -> None:
    """The private folder gone: renamed first (a late writer then finds no folder), then removed."""
    global _root
    with _lock:
        root, _root = _root, None
    if root is None:
        return
    try:
        os.rename(os.path.join(root, "files"), os.path.join(root, "removed"))
    except OSError:
        pass
    shutil.rmtree(root, ignore_errors=True)
