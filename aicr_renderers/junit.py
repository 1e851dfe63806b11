"""`-o junit`: `policy test`'s report as JUnit XML, the format GitLab, Jenkins and GitHub's test
reporters read: a `testsuite` per test file (`tests`, `failures`, `errors`), a `testcase` per case
(`name`: the case, `classname`: the file), a `failure` with the differences under each failing case,
and an `error` under a case that could not be decided (a fixture or policy file that cannot be used):
a site's CI tells a suite that is wrong from a policy that changed.

Names are escaped injectively: a backslash is doubled before control characters are shown as
`\\x01`, and a character XML cannot carry (U+FFFE) is shown as its escape too, so two different case
names never become one `testcase` name.

It prints this one kind (`kinds`): the core refuses `-o junit` on any other command before it runs.
"""
from __future__ import annotations

import re
from typing import Any, TextIO
from xml.etree import ElementTree

from aicr_core.plugin import Renderer, Result, UsageError, safe
from aicr_renderers.policy_layouts import failure_lines

KIND = "PolicyTestReport"
# What XML 1.0 cannot carry at all, even escaped (control characters but tab and newlines, lone
# surrogates, U+FFFE/U+FFFF): shown as an escape, so that no value can make the document unreadable.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _text(item: Any) -> str:
    """A value as one line: control characters shown escaped (`\\x1b`), as the text output shows them; a
    backslash doubled first, so that `a\\x01` (typed) and `a` + U+0001 stay two names. A TAB is escaped
    too: a reader normalises one in an attribute to a space."""
    text = ("" if item is None else str(item)).replace("\\", "\\\\")
    return _NOT_XML.sub(_escape, safe(text, allow_newlines=False).replace("\t", "\\x09"))


class JunitRenderer(Renderer):
    kinds = (KIND,)
    separator = ""

    def render(self, result: Result, out: TextIO) -> None:
        if result.kind != KIND:
            raise UsageError(f'output format "junit" prints only {KIND} results, not a {result.kind}')
        suites: dict[str, list[dict[str, Any]]] = {}
        for item in result.data.get("items") or []:
            suites.setdefault(str(item.get("file")), []).append(item)
        every = [i for items in suites.values() for i in items]
        root = ElementTree.Element("testsuites", name="kubectl aicr policy test", tests=str(len(every)),
                                   failures=str(sum(_failed(i) for i in every)),
                                   errors=str(sum(_undecided(i) for i in every)))
        unnamed = {str(entry.get("file")): entry for entry in result.data.get("unnamedPolicies") or []}
        for file, items in suites.items():
            suite = ElementTree.SubElement(root, "testsuite", name=_text(file), tests=str(len(items)),
                                           failures=str(sum(_failed(i) for i in items)),
                                           errors=str(sum(_undecided(i) for i in items)), skipped="0")
            if file in unnamed:  # JUnit's properties come first in a testsuite
                properties = ElementTree.SubElement(suite, "properties")
                for name in unnamed[file].get("policies") or []:
                    ElementTree.SubElement(properties, "property", name="aicr.unnamed-policy", value=_text(name))
            for item in items:
                case = ElementTree.SubElement(suite, "testcase", name=_text(item.get("case")), classname=_text(file))
                if _undecided(item):
                    error = ElementTree.SubElement(case, "error", message=_text(item.get("error")),
                                                   type="PolicyTestError")
                    error.text = _text(item.get("error"))
                elif not item.get("passed"):
                    lines = [_text(line) for line in failure_lines(item)]
                    failure = ElementTree.SubElement(case, "failure", message=lines[0] if lines else "failed",
                                                     type="PolicyTestFailure")
                    failure.text = "\n".join(lines)
        ElementTree.indent(root)
        out.write('<?xml version="1.0" encoding="UTF-8"?>\n' + ElementTree.tostring(root, encoding="unicode") + "\n")


def _undecided(item: Any) -> bool:
    """A case that could not be decided (its `error`): an `<error>`, not a `<failure>`."""
    return not item.get("passed") and item.get("error") is not None


def _failed(item: Any) -> bool:
    return not item.get("passed") and item.get("error") is None
