"""A TCP relay in front of a server (TLS passes through): stopped, the server stops answering for whoever used it."""
from __future__ import annotations

import contextlib
import socket
import threading


class Proxy:
    """A TCP relay between the dashboard and the plane (TLS passes through): stopped, the cluster stops answering."""

    def __init__(self, upstream: tuple[str, int], port: int = 0) -> None:
        self.upstream = upstream
        self.listener = socket.create_server(("127.0.0.1", port))
        self.port = self.listener.getsockname()[1]
        self.open: list[socket.socket] = []
        self.stopped = threading.Event()
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self) -> None:
        while not self.stopped.is_set():
            try:
                near, _ = self.listener.accept()
            except OSError:
                return
            if self.stopped.is_set():  # accepted as it stopped: a stopped relay lets nothing through
                near.close()
                return
            far = socket.create_connection(self.upstream)
            self.open += [near, far]
            for a, b in ((near, far), (far, near)):
                threading.Thread(target=self.pump, args=(a, b), daemon=True).start()

    @staticmethod
    def pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def stop(self) -> None:
        self.stopped.set()
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes a blocked accept() (close alone may not)
        self.listener.close()
        for s in self.open:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()
