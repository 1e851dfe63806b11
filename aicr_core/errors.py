"""Errors a user sees: `error: [CODE] message`, exit 1, or 2 for usage errors.

Every failure the plugin knows about is an `AicrError` with a stable `Code`
(the table of docs/usage.md lists exactly the members of `Code`). Anything else
reaching the top is a bug and is reported as `INTERNAL`, never as a traceback
(unless AICR_DEBUG=1).
"""
from __future__ import annotations

import enum
import reprlib
from collections.abc import Sequence
from typing import Any

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class Code(str, enum.Enum):
    """The stable CODE of every failure; a `str` enum, so `[CODE]` prints its value.

    Each member carries what it means (`meaning`): help's code tables, each
    command's `Codes:` lines and the docs' table take it from here (a test
    checks the docs).
    """

    meaning: str

    def __new__(cls, value: str, meaning: str = "") -> Code:  # the default only for type checkers: Code("X") looks up
        member = str.__new__(cls, value)
        member._value_ = value
        member.meaning = meaning
        return member

    USAGE = "USAGE", (
        "unknown command or flag, missing name or --reason, extra arguments, a bad flag value, an unknown -o"
    )
    KUBECONFIG = "KUBECONFIG", (
        "no kubeconfig, unreadable or broken file, unknown context, failing credentials (exec) plugin, a "
        "token or impersonation value with a control character (the header is named, never its value)"
    )
    UNAUTHORIZED = "UNAUTHORIZED", "the API server rejected the credentials (401)"
    FORBIDDEN = "FORBIDDEN", "RBAC said no (403); the server's message follows"
    ADMISSION_DENIED = "ADMISSION_DENIED", (
        "a CRD rule, a ValidatingAdmissionPolicy or the admission webhook rejected the write; the server's "
        "message follows"
    )
    NOT_FOUND = "NOT_FOUND", (
        "rollout, plan or runtime not found (also: a plan ConfigMap that records another digest; list: the "
        "server does not serve the operator's CRDs)"
    )
    CONFLICT = "CONFLICT", (
        "the rollout changed between read and write and the change was not an "
        "approval/revocation/acknowledgement; nothing written"
    )
    TIMEOUT = "TIMEOUT", (
        "the command's 30-second API deadline ran out; wait: the condition did not hold within --timeout"
    )
    UNAVAILABLE = "UNAVAILABLE", "cannot connect, TLS failure, 5xx, an answer that is not JSON"
    ENDED = "ENDED", "approve/revoke: the rollout has ended; wait: it ended without meeting the condition"
    ALREADY_APPROVED = "ALREADY_APPROVED", (
        "approve: already approved (names who and until when; also the loser of a race)"
    )
    APPROVAL_NOT_REQUIRED = "APPROVAL_NOT_REQUIRED", "approve: the rollout needs no approval"
    DEADLINE_PASSED = "DEADLINE_PASSED", "approve without --expires: the rollout's deadline has passed"
    NOT_APPROVED = "NOT_APPROVED", "revoke: nothing to revoke"
    ALREADY_REVOKED = "ALREADY_REVOKED", "revoke: already revoked (names who and when)"
    NOT_AWAITING_ACKNOWLEDGEMENT = "NOT_AWAITING_ACKNOWLEDGEMENT", (
        "acknowledge: the rollout is not waiting, or the awaited release is already acknowledged"
    )
    UNREACHABLE = "UNREACHABLE", "wait: the condition can never hold (no approval needed; approval revoked or expired)"
    POLICY_DENIED = "POLICY_DENIED", (
        "a pre-approve/revoke/acknowledge policy said no, or an --override was refused; every violation is "
        "listed; nothing written"
    )
    POLICY_ERROR = "POLICY_ERROR", (
        "a policy plugin failed to load, misspelt a hook, raised or returned junk; the policy file does not "
        "validate, names a policy that is not installed, requires a missing plugin, or cannot be read: fail "
        "closed"
    )
    NO_PLAN = "NO_PLAN", "reproduce: the runtime has neither an active nor a candidate plan"
    NO_RECIPE = "NO_RECIPE", "reproduce: the plan was rebuilt from Argo CD Applications"
    NO_RENDER_FLAGS = "NO_RENDER_FLAGS", "reproduce: the plan does not record its render flags"
    DIGEST_MISMATCH = "DIGEST_MISMATCH", "reproduce: recipe.json does not match recipeDigest; nothing written"
    INVALID_PLAN = "INVALID_PLAN", (
        "reproduce: the plan's aicrImage or bundle is not a reference pinned by digest "
        "(registry/repository[:tag]@sha256:<64 hex>, the bundle with oci://), or its renderFlags are not a "
        "JSON array of strings without control characters; the field is named, nothing written"
    )
    WRITE_FAILED = "WRITE_FAILED", "reproduce: the recipe could not be written (the previous file is left as it was)"
    INVALID_OBJECT = "INVALID_OBJECT", (
        "an object from the cluster does not have the shape of the operator API (a field of the wrong type, "
        "say), or the cluster's schema lacks a field a write sets (writes use fieldValidation=Strict, as "
        "kubectl does, so nothing is silently pruned)"
    )
    PLUGIN_ERROR = "PLUGIN_ERROR", (
        "the selected command or renderer failed to load, or two distributions claim its name; a plugin "
        "command returned something that is not a Result of plain JSON data, an after-hook returned no exit "
        "code, or a renderer failed (nothing is printed)"
    )
    INTERRUPTED = "INTERRUPTED", (
        "Ctrl-C, or SIGTERM during a fleet read (exit 143); in a fleet write's result, a cluster whose write had "
        "no answer when a second signal came (it may be stored)"
    )
    INTERNAL = "INTERNAL", "a bug; AICR_DEBUG=1 shows the traceback"

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    @property
    def exit_code(self) -> int:
        if self is Code.USAGE:
            return EXIT_USAGE
        if self is Code.INTERRUPTED:
            return EXIT_INTERRUPTED
        return EXIT_FAILED


# What any command that talks to the API server may return: help lists them for a `Codes:` line `API`.
API_CODES = (Code.KUBECONFIG, Code.UNAUTHORIZED, Code.FORBIDDEN, Code.TIMEOUT, Code.UNAVAILABLE, Code.INVALID_OBJECT)


class VerdictWord(str, enum.Enum):
    """What one approval policy said of a write (`policy check`'s lines, the decision record, the webhook's log).

    Not `Verdict`: that name is the policy hook's return type (`aicr_core.plugin.Verdict`).
    """

    ALLOW = "allow"
    WARN = "warn"  # a violation of a policy in warn mode: the write goes ahead
    DENY = "deny"
    OVERRIDDEN = "overridden"  # a refusal of an overridable policy, overridden with --override
    ERROR = "error"  # the policy raised or returned junk: refuses (fail closed)
    SKIPPED = "skipped"  # policy check only: the policy read a field of the proposed write that was not given

    def __str__(self) -> str:
        return self.value

    @property
    def refuses(self) -> bool:
        return self in (VerdictWord.DENY, VerdictWord.ERROR)


class AicrError(Exception):
    """A failure with a stable `Code` and, optionally, indented detail lines."""

    def __init__(self, code: Code | str, message: str, details: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.code = Code(code)  # a string that is no Code is a bug: ValueError, reported as INTERNAL
        self.message = message
        self.details = list(details)

    @property
    def exit_code(self) -> int:
        return self.code.exit_code

    def __str__(self) -> str:
        return f"[{self.code}] {self.message}"


class UsageError(AicrError):
    """Unknown command or flag, missing argument, bad flag value: exit 2.

    `suggestions`: for an unknown command or flag, the known names it may have meant (printed after
    the error line as kubectl's "Did you mean this?"; aicr_core/framework/suggestions.py).
    """

    def __init__(self, message: str, suggestions: Sequence[str] = ()) -> None:
        super().__init__(Code.USAGE, message)
        self.suggestions = list(suggestions)


class HelpRequested(Exception):
    """Raised by `-h/--help` so that help goes through the `help` command."""

    def __init__(self, command: str | None) -> None:
        super().__init__(command or "")
        self.command = command


class _ShortRepr(reprlib.Repr):
    """reprlib's bounded repr (a few levels, a few items), with a string's or a number's *prefix* kept."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.maxlevel, self.maxdict, self.maxlist, self.maxtuple, self.maxset = 3, 4, 4, 4, 4
        self.maxstring = self.maxother = limit
        self.limit = limit

    def repr_str(self, x: str, level: int) -> str:
        return repr(x[:self.limit]) + ("..." if len(x) > self.limit else "")

    def repr_int(self, x: int, level: int) -> str:
        if x.bit_length() > 3 * self.limit:  # str() of a huge int is slow, and refused past 4,300 digits
            return f"<a number of about {int(x.bit_length() * 0.30103)} digits>"
        return super().repr_int(x, level)


def shown(value: Any, limit: int = 60) -> str:
    """A short, escaped rendering of an input value for a message: repr-like, at most about `limit` characters.

    Never `repr`/`str` an input value into a message: a 10 MB string would become a 10 MB error line,
    and a YAML anchor bomb (shared references) would be expanded by the walk (issue 23). This one does
    bounded work: a few levels, a few items, a string's first `limit` characters (control characters
    escaped, as repr escapes them).
    """
    text = _ShortRepr(limit).repr(value)
    return text if len(text) <= limit + 5 else text[:limit] + "..."


def shown_argument(text: str, limit: int = 200) -> str:
    """A command-line argument (or a file's path) echoed in an error: itself when at most `limit` printable
    characters, else a short escaped prefix (`shown`)."""
    if len(text) <= limit and text.isprintable():
        return text
    return shown(text, limit)
