"""`-o junit`: `policy test`'s report as JUnit XML, the format GitLab, Jenkins and GitHub's test
reporters read: a `testsuite` per test file (`tests`, `failures`), a `testcase` per case (`name`: the
case, `classname`: the file), and a `failure` with the differences under each failing case.

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
# surrogates, U+FFFE/U+FFFF): replaced, so that no value can make the document unreadable.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _text(item: Any) -> str:
    """A value as one line: control characters shown escaped (`\\x1b`), as the text output shows them."""
    return _NOT_XML.sub("\ufffd", safe("" if item is None else str(item), allow_newlines=False))


class JunitRenderer(Renderer):
    kinds = (KIND,)
    separator = ""

    def render(self, result: Result, out: TextIO) -> None:
        if result.kind != KIND:
            raise UsageError(f'output format "junit" prints only {KIND} results, not a {result.kind}')
        suites: dict[str, list[dict[str, Any]]] = {}
        for item in result.data.get("items") or []:
            suites.setdefault(str(item.get("file")), []).append(item)
        root = ElementTree.Element("testsuites", name="kubectl aicr policy test",
                                   tests=str(sum(len(items) for items in suites.values())),
                                   failures=str(sum(not i.get("passed") for items in suites.values() for i in items)),
                                   errors="0")
        for file, items in suites.items():
            suite = ElementTree.SubElement(root, "testsuite", name=_text(file), tests=str(len(items)),
                                           failures=str(sum(not i.get("passed") for i in items)), errors="0",
                                           skipped="0")
            for item in items:
                case = ElementTree.SubElement(suite, "testcase", name=_text(item.get("case")), classname=_text(file))
                if not item.get("passed"):
                    lines = [_text(line) for line in failure_lines(item)]
                    failure = ElementTree.SubElement(case, "failure", message=lines[0] if lines else "failed",
                                                     type="PolicyTestFailure")
                    failure.text = "\n".join(lines)
        ElementTree.indent(root)
        out.write('<?xml version="1.0" encoding="UTF-8"?>\n' + ElementTree.tostring(root, encoding="unicode") + "\n")
