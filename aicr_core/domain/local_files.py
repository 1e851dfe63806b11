"""Local files read within a bound: at most the limit plus one byte, and only from a regular file.

`/dev/zero` would otherwise be read until memory runs out, a FIFO would block
the command until some writer came, and a size limit checked after reading
the whole file protects nothing.

The one reader of every file flag (`--policy-file`, `--waves`, `--cluster-profile-providers`,
`policy test`'s files and fixtures, `-o jsonpath-file=`/`custom-columns-file=`): in the domain room,
which the fleet may import too, and offered to renderers through the plugin face (the renderers'
templates read through it; the framework, beside the domain and importing none of it, reads no file flag
itself).
"""
from __future__ import annotations

import os
import stat

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


class Refused(ValueError):
    """Not read: not a regular file, or larger than the limit (the message says which, in words)."""


def read_text(path: str, limit: int) -> str:
    """The UTF-8 text of the regular file `path`, of at most `limit` bytes; Refused otherwise.

    OSError when it cannot be opened, UnicodeDecodeError when it is not UTF-8.
    """
    # O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer (a regular file ignores it).
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = next((name for test, name in _KINDS if test(mode)), "a special file")
            raise Refused(f"not a regular file ({kind})")
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 16, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    if size > limit:
        raise Refused(f"larger than {limit} bytes")
    return b"".join(chunks).decode("utf-8")
