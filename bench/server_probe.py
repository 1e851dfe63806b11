#!/usr/bin/env python3
"""The hostile clients of tests/admission/test_admission_server.py against uvicorn, hypercorn and aiohttp.

Evidence for docs/webhook.md ("Choosing the server"): each server is run with
the settings that come closest to the webhook's limits (a 2 s handshake, a
1 s request, a 1000-byte body, a cap of 4 connections, where it has them),
and each case reports what a client sees. Not a test (the frameworks are not
dependencies of this project): run it in a scratch virtualenv with
    pip install uvicorn starlette hypercorn aiohttp cryptography
    python bench/server_probe.py CERT KEY CA
"""
from __future__ import annotations

import asyncio
import multiprocessing
import socket
import ssl
import sys
import time

PORT = 18443
CAP = 4


def uvicorn_server(cert: str, key: str) -> None:
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def validate(request: Request) -> JSONResponse:
        body = await request.body()  # Starlette has no body limit: an app must count for itself
        return JSONResponse({"got": len(body)})

    app = Starlette(routes=[Route("/validate", validate, methods=["POST"])])
    uvicorn.run(app, host="127.0.0.1", port=PORT, ssl_certfile=cert, ssl_keyfile=key, log_level="critical",
                timeout_keep_alive=120, limit_concurrency=CAP, h11_max_incomplete_event_size=64 * 1024)


def hypercorn_server(cert: str, key: str) -> None:
    from hypercorn.asyncio import serve
    from hypercorn.config import Config
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def validate(request: Request) -> JSONResponse:
        return JSONResponse({"got": len(await request.body())})

    config = Config()
    config.bind = [f"127.0.0.1:{PORT}"]
    config.certfile, config.keyfile = cert, key
    config.ssl_handshake_timeout = 2
    config.read_timeout = 1
    config.keep_alive_timeout = 120
    config.h11_max_incomplete_size = 64 * 1024
    config.loglevel = "CRITICAL"
    asyncio.run(serve(Starlette(routes=[Route("/validate", validate, methods=["POST"])]), config))  # type: ignore[arg-type]


def aiohttp_server(cert: str, key: str) -> None:
    from aiohttp import web

    async def validate(request: web.Request) -> web.Response:
        return web.json_response({"got": len(await request.read())})

    app = web.Application(client_max_size=1000)
    app.router.add_post("/validate", validate)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    web.run_app(app, host="127.0.0.1", port=PORT, ssl_context=context, keepalive_timeout=120, print=None)


def connect(ca: str, handshake: bool = True) -> socket.socket:
    raw = socket.create_connection(("127.0.0.1", PORT), timeout=10)
    if not handshake:
        return raw
    return ssl.create_default_context(cafile=ca).wrap_socket(raw, server_hostname="localhost")


def closed_after(sock: socket.socket, send: bytes, every: float, limit: float = 8.0) -> str:
    """Send `send` a byte at a time every `every` s; when the server closed (or answered), else '> limit'."""
    started = time.monotonic()
    sock.settimeout(every)
    i = 0
    while time.monotonic() - started < limit:
        try:
            if send:
                sock.sendall(send[i % len(send):i % len(send) + 1])
                i += 1
            data = sock.recv(100)
            took = time.monotonic() - started
            return f"closed at {took:.1f} s" if not data else f"answered {data.split(b' ')[1].decode()} at {took:.1f} s"
        except (TimeoutError, ssl.SSLWantReadError):
            continue
        except OSError as err:
            return f"dropped at {time.monotonic() - started:.1f} s ({type(err).__name__})"
    return f"still open at {limit:.0f} s"


def status_of(sock: socket.socket, head: bytes, body: bytes = b"") -> str:
    started = time.monotonic()
    sock.sendall(head + body)
    data = b""
    sock.settimeout(5)
    try:
        while b"\r\n" not in data:
            chunk = sock.recv(1000)
            if not chunk:
                break
            data += chunk
    except (TimeoutError, OSError) as err:
        return f"no answer ({type(err).__name__})"
    return f"{data.split(b' ')[1].decode() if data else 'closed'} in {time.monotonic() - started:.2f} s"


def probe(ca: str) -> dict[str, str]:
    result = {}
    result["stalled TLS handshake"] = closed_after(connect(ca, handshake=False), b"", 0.2)
    result["headers trickled (1 B / 0.2 s)"] = closed_after(connect(ca), b"POST /validate HTTP/1.1\r\nX-A: b", 0.2)
    result["10 MB announced, headers only"] = status_of(
        connect(ca), b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000\r\n\r\n")
    result["chunked body"] = status_of(connect(ca), b"POST /validate HTTP/1.1\r\nHost: x\r\n"
                                                    b"Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n")
    idle = [connect(ca) for _ in range(CAP + 2)]  # more kept connections than the cap, idle
    result[f"a request past {CAP} idle connections"] = status_of(
        connect(ca), b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
    for sock in idle:
        sock.close()
    return result


def main() -> int:
    cert, key, ca = sys.argv[1:4]
    table: dict[str, dict[str, str]] = {}
    for name, target in (("uvicorn+Starlette", uvicorn_server), ("hypercorn", hypercorn_server),
                         ("aiohttp", aiohttp_server)):
        proc = multiprocessing.Process(target=target, args=(cert, key), daemon=True)
        proc.start()
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", PORT), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        try:
            table[name] = probe(ca)
        finally:
            proc.terminate()
            proc.join(5)
    cases = list(next(iter(table.values())))
    print("| case | " + " | ".join(table) + " |")
    print("|---" * (len(table) + 1) + "|")
    for case in cases:
        print(f"| {case} | " + " | ".join(table[name][case] for name in table) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
