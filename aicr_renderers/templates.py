"""`-o jsonpath=TEMPLATE`, `-o jsonpath-file=FILE`: kubectl's template, applied to the `-o json` document.

The template is parsed when the renderer is configured, before the command
runs: one that does not parse is USAGE (exit 2) before any API call. Each
document of a stream (`describe --watch`, `list --watch`) is printed on its own,
with nothing between, as `kubectl get -w -o jsonpath=...` prints them, and no
newline is added (a template says `{"\\n"}` where it wants one).

The engine is `aicr_core.plugin.jsonpath` (aicr_core/framework/jsonpath.py) (client-go's dialect). What it prints
still goes through `safe()`: a control character from the cluster is shown as
an escape, never sent to the terminal; the template's own `\\n` and `\\t` stay.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, TextIO

from aicr_core.plugin import Renderer, Result, UsageError, safe, shown_argument

if TYPE_CHECKING:
    from aicr_core.plugin import jsonpath


def document(result: Result) -> dict[str, Any]:
    """The document `-o json` prints for the result (docs/output.md)."""
    return {"kind": result.kind, **result.data}


MAX_TEMPLATE_BYTES = 1 << 20  # a template is a line or a page; /dev/zero would otherwise be read until memory ran out


def read_template_file(path: str, flag: str) -> str:
    """A template file's text (a regular file of at most 1 MiB); USAGE naming it otherwise (before any API call)."""
    if not path:
        raise UsageError(f"-o {flag}= needs a file name")
    from aicr_core.plugin import local_files

    try:
        return local_files.read_text(path, MAX_TEMPLATE_BYTES)
    except local_files.Refused as refused:
        raise UsageError(f"error reading {flag} {shown_argument(path)}: {refused}") from None
    except (OSError, UnicodeDecodeError) as err:
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        raise UsageError(f"error reading {flag} {shown_argument(path)}: {reason}") from None


def parse_template(text: str) -> jsonpath.Template:
    from aicr_core.plugin import jsonpath

    if not text:
        raise UsageError("template format specified but no template given")
    try:
        return jsonpath.parse(text)
    except jsonpath.JsonPathError as err:
        raise UsageError(f"error parsing jsonpath {echoed(text)}: {shown_argument(str(err), 200)}") from None


class JsonPathRenderer(Renderer):
    separator = ""
    argument = "TEMPLATE"
    argument_required = True
    flag = "jsonpath"

    def __init__(self) -> None:
        self.template: jsonpath.Template | None = None

    def parse_argument(self, argument: str) -> None:
        self.template = parse_template(argument)

    def render(self, result: Result, out: TextIO) -> None:
        from aicr_core.plugin import jsonpath

        assert self.template is not None, "configure() reads the template first"
        try:
            text = self.template.execute(document(result), allow_missing=self.options.allow_missing_template_keys)
        except jsonpath.JsonPathError as err:
            raise UsageError(f"error executing jsonpath {echoed(self.template.source)}: "
                             f"{shown_argument(str(err), 200)}; nothing was printed") \
                from None
        out.write(safe(text))


class JsonPathFileRenderer(JsonPathRenderer):
    argument = "FILE"
    flag = "jsonpath-file"

    def parse_argument(self, argument: str) -> None:
        self.template = parse_template(read_template_file(argument, self.flag))


def echoed(template: str) -> str:
    """A template as its error echoes it: whole up to 200 characters (the error line escapes control
    characters, so a file's trailing newline reads `\\n`, as before), else a short escaped prefix."""
    return template if len(template) <= 200 else shown_argument(template)
