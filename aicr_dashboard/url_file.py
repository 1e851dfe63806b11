"""The URL with its token, in a file only the user may read: how `--open` hands it to the browser.

The token is on no process's command line (a browser started with the URL would show it to every
user of the machine in `ps`): the browser is given a file that only the user can read, which
sends it on. The file is written atomically (a reader never sees half a URL) and removed at the stop.
"""
from __future__ import annotations

import contextlib
import html
import os
from pathlib import Path


def folder() -> Path:
    """`$XDG_RUNTIME_DIR` (a folder of the user's own, gone at logout), else the user's cache folder."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isdir(runtime):
        return Path(runtime) / "kubectl-aicr"
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "kubectl-aicr"


def write_private(path: Path, text: str) -> None:
    """`text` into `path`, mode 0600, atomically: a file of its own renamed over the name."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    part = path.with_name(f".{path.name}.{os.getpid()}.part")
    fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(part, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(part)
        raise


class UrlFiles:
    """The URL file (`dashboard-PORT.url`: the URL, one line) and the page `--open` gives the browser."""

    def __init__(self, url: str, port: int, where: Path | None = None) -> None:
        self.url = url
        base = where or folder()
        self.path = base / f"dashboard-{port}.url"
        self.page = base / f"dashboard-{port}.html"

    def write(self) -> None:
        write_private(self.path, self.url + "\n")

    def open_browser(self) -> bool:
        """The user's browser on a page of the user's own that sends it to the URL (no script: a refresh)."""
        import webbrowser

        target = html.escape(self.url, quote=True)
        write_private(self.page, '<!doctype html><meta charset="utf-8"><title>kubectl aicr dashboard</title>'
                                 f'<meta http-equiv="refresh" content="0;url={target}">\n')
        return webbrowser.open(self.page.as_uri())

    def remove(self) -> None:
        for path in (self.path, self.page):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
