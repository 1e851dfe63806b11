"""The browser sessions: what the URL token was exchanged for, each with its form token and its flash.

A session is made when a browser brings the URL's token (`GET /?token=...`): its id goes into the
cookie (never the token itself: no cookie holds the URL's token), its form token into every form's
hidden `csrf` field. A script that sends `Authorization: Bearer TOKEN` has one session of its own.
The flash is the CLI's line of a write, kept here for the browser's next view of that rollout and
shown once: never carried in a URL. Bounded: the oldest sessions go first.
"""
from __future__ import annotations

import hmac
import secrets
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

MAX_SESSIONS = 64  # browsers and tabs of one person: the oldest session is dropped beyond this
BEARER = "bearer"  # the scripts' session (Authorization: Bearer TOKEN)


@dataclass
class BrowserSession:
    id: str
    csrf: str
    flashes: dict[tuple[str, str], tuple[list[str], bool]] = field(default_factory=dict)  # (context, rollout) -> lines
    checks: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)  # the last Check, shown once
    last_form: dict[tuple[str, str, str], list[str]] = field(default_factory=dict)  # the argv last submitted


class Sessions:
    def __init__(self) -> None:
        self._by_id: OrderedDict[str, BrowserSession] = OrderedDict()
        self._lock = threading.Lock()
        self.bearer = BrowserSession(BEARER, secrets.token_urlsafe(32))

    def new(self) -> BrowserSession:
        session = BrowserSession(secrets.token_urlsafe(32), secrets.token_urlsafe(32))
        with self._lock:
            self._by_id[session.id] = session
            while len(self._by_id) > MAX_SESSIONS:
                self._by_id.popitem(last=False)
        return session

    def find(self, session_id: str) -> BrowserSession | None:
        with self._lock:
            for known, session in self._by_id.items():
                if hmac.compare_digest(known.encode(), session_id.encode()):
                    return session
        return None
