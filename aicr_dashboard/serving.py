"""The dashboard's run: the process owner, the socket, the URL line and file, the watches, uvicorn, the stop.

In order, so that whatever can be refused is refused before it listens: the address (loopback
only, `loopback`), the clusters (`list`'s selection, handed in by the command: its [USAGE] and a
hub that cannot be listed end the command with `list`'s exit codes), the socket (a port in use is
[UNAVAILABLE] naming it); then the URL line on stderr and the URL file, then the watches and the
server. uvicorn serves with its h11 parser, no proxy headers, no access log (a URL may hold the
token), no server header, no websockets.

The signals are ours, not uvicorn's: SIGINT or SIGTERM ends every event stream at once and asks
uvicorn to stop (a request being answered, a write among them, finishes within its deadline);
then the URL file is removed and the command ends as the CLI's long-running commands do:
`error: [INTERRUPTED] interrupted` (exit 130) or `interrupted (SIGTERM)` (exit 143), no traceback.
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import secrets
import signal
import socket
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import FrameType
from typing import TYPE_CHECKING, Any, TextIO

from aicr_core.errors import AicrError, Code

if TYPE_CHECKING:
    from aicr_dashboard.cluster_watch import Connect
    from aicr_dashboard.page_routes import Dashboard

GRACEFUL_SECONDS = 2  # uvicorn's wait for requests being answered, once asked to stop
OWNER_NAME = "kubectl-aicr dashboard"


@dataclass(frozen=True)
class Member:
    """A selected cluster as the dashboard needs it: its name, its server (a ClusterProfile member's HOST:PORT),
    the flags that reach it alone (None: only the fleet form does), and how to connect it."""

    context: str
    server: str | None
    reach: str | None
    connect: Connect


@dataclass(frozen=True)
class Selection:
    members: list[Member]
    fleet_form: bool  # `list`'s fleet form (--contexts, --all-contexts, --cluster-profiles ...)


def listening_socket(address: str, port: int) -> socket.socket:
    """The socket, bound and listening; [UNAVAILABLE] naming the port when it is in use."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((address, port))
        sock.listen(128)
    except OSError as err:
        sock.close()
        if err.errno == errno.EADDRINUSE:
            raise AicrError(Code.UNAVAILABLE, f"port {port} on {address} is in use: pick another with --port, "
                            "or --port 0 for any free one") from None
        raise AicrError(Code.UNAVAILABLE, f"cannot listen on {address} port {port}: {err.strerror}") from None
    sock.set_inheritable(False)
    return sock


@contextlib.contextmanager
def server_owner() -> Iterator[None]:
    """The process owned as a server's for the run: no credentials prompt (no terminal to answer it), no
    SIGALRM (the main thread runs the event loop), no GC pause; the command line's owner back after."""
    from aicr_core import process_owner

    previous = process_owner.current()
    if previous is not process_owner.DEFAULT:
        process_owner.uninstall()
    try:
        with process_owner.installed(process_owner.ProcessOwner.server(OWNER_NAME)):
            yield
    finally:
        if previous is not process_owner.DEFAULT:
            process_owner.install(previous)


class _Stop:
    """The first signal taken: which one, and what it asks of the server."""

    def __init__(self, on_stop: Callable[[], None]) -> None:
        self.signals: list[int] = []
        self.on_stop = on_stop
        self._previous: dict[int, Any] = {}

    def take_over(self) -> None:
        for signum in (signal.SIGINT, signal.SIGTERM):
            self._previous[signum] = signal.signal(signum, self._handle)

    def restore(self) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        self.signals.append(signum)
        self.on_stop()


def build(selection: Selection, args: argparse.Namespace, *, token: str, address: str, port: int,
          read_only: bool) -> tuple[Any, Dashboard, dict[str, Connect]]:
    """The ASGI app (the envelope around the routes), what it serves from, and each cluster's connect."""
    from aicr_dashboard import loopback
    from aicr_dashboard.browser_sessions import Sessions
    from aicr_dashboard.envelope import Envelope
    from aicr_dashboard.event_stream import Streams
    from aicr_dashboard.fleet_model import ClusterLine, FleetModel
    from aicr_dashboard.page_routes import Dashboard, Routes, writes_nothing

    # Members that resolve to one server, as the fleet write compares them (write_items.shared_clusters):
    # a hub writer may point a member's name at another's cluster.
    servers = [m.server for m in selection.members if m.server is not None]
    shared = {m.context for m in selection.members if m.server is not None and servers.count(m.server) > 1}
    lines = [ClusterLine(m.context, m.server, m.context in shared, m.reach) for m in selection.members]
    model = FleetModel(lines, selection.fleet_form)
    dashboard = Dashboard(model, Sessions(), Streams(), args, args.operator_namespace, read_only)
    app = Envelope(Routes(dashboard), token=token, hosts=loopback.allowed_hosts(address, port),
                   origins=loopback.origins(address, port), port=port, sessions=dashboard.sessions,
                   read_only=read_only, writes_nothing=writes_nothing)
    return app, dashboard, {m.context: m.connect for m in selection.members}


def run(args: argparse.Namespace, select: Callable[[], Selection], stderr: TextIO | None = None) -> None:
    """The whole run, until a signal (see the module's doc); raises KeyboardInterrupt (SIGINT) or the CLI's
    `Terminated` (SIGTERM) at the end, which the app reports as `error: [INTERRUPTED] ...`."""
    from aicr_dashboard import loopback

    out = stderr or sys.stderr
    address = loopback.bind_address(args.address)
    with server_owner():
        selection = select()
        sock = listening_socket(address, args.port)
        try:
            port = sock.getsockname()[1]
            token = secrets.token_urlsafe(32)
            app, dashboard, connects = build(selection, args, token=token, address=address, port=port,
                                             read_only=args.read_only)
            stopped = serve(app, dashboard, connects, sock, args, out,
                            url=f"http://{loopback.url_host(address)}:{port}/?token={token}", port=port)
        finally:
            sock.close()
    from aicr_core.framework.interruption import Terminated

    if stopped == signal.SIGTERM:
        raise Terminated()
    raise KeyboardInterrupt()


def serve(app: Any, dashboard: Dashboard, connects: dict[str, Connect], sock: socket.socket,
          args: argparse.Namespace, out: TextIO, *, url: str, port: int) -> int:
    """Print the URL line, write the URL file, start the watches, serve until a signal: which one."""
    import uvicorn

    from aicr_dashboard import cluster_watch
    from aicr_dashboard.url_file import UrlFiles

    config = uvicorn.Config(app, http="h11", ws="none", lifespan="off", loop="asyncio", log_config=None,
                            access_log=False, proxy_headers=False, server_header=False, date_header=True,
                            timeout_graceful_shutdown=GRACEFUL_SECONDS)
    server = quiet_server(config)

    from aicr_dashboard.page_actions import IN_FLIGHT

    def on_stop() -> None:  # in the signal handler: only flags and a wake-up of the loop
        if server.should_exit:
            server.force_exit = True
        server.should_exit = True
        IN_FLIGHT.stop()  # no write begins now
        dashboard.streams.close_all()

    stop = _Stop(on_stop)
    stop.take_over()
    files = UrlFiles(url, port)
    try:
        try:
            files.write()
        except OSError as err:
            raise AicrError(Code.UNAVAILABLE, f"cannot write the URL file {files.path}: {err.strerror}; set "
                            "XDG_RUNTIME_DIR to a folder of yours") from None
        out.write(f"kubectl aicr dashboard: open {url} (also in {files.path}, readable by you alone; "
                  "Ctrl-C stops it)\n")
        out.flush()
        watches = cluster_watch.start(dashboard.model, connects, dashboard.namespace)
        if args.open and not opened(files):
            out.write("warning: no browser could be opened: open the URL above\n")
            out.flush()
        if not stop.signals:
            asyncio.run(server.serve(sockets=[sock]))
        watches.set()
        IN_FLIGHT.stop()
        for lines in IN_FLIGHT.wait():  # a write that was on the wire at the stop: its outcome, as the CLI says it
            out.write("kubectl aicr dashboard: a write on the wire at the stop ended:\n" + "\n".join(lines) + "\n")
            out.flush()
    finally:
        files.remove()
        stop.restore()
    return stop.signals[0] if stop.signals else signal.SIGINT


def opened(files: Any) -> bool:
    """--open: the browser started on the user's file (False when none could be, whatever the reason)."""
    try:
        return bool(files.open_browser())
    except Exception:  # noqa: BLE001 - webbrowser's failures are many; the URL line stands in for it
        return False


def quiet_server(config: Any) -> Any:
    """uvicorn's server with its signal handling left to us (`_Stop`): it neither takes the signals nor raises
    them again at its end."""
    import uvicorn

    class Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

    return Server(config)
