"""Strings from the history, made safe to print: one helper for every terminal, log and report line.

A history can hold imported strings (case ids, messages, branches, metrics) that nobody checked for
control characters. Printed raw they move the cursor, clear the screen, or, in a CI log, start a
line the CI system obeys (GitHub's ``::error ...::``, Azure's ``##vso[...]``). So:

* :func:`safe_text` escapes control characters (C0, DEL, C1, line and paragraph separators and the
  bidirectional overrides) the way Python writes them (``\\n``, ``\\x1b``, ``\\u202e``): a value
  stays on its line and shows what it holds. A printable string is returned unchanged.
* :func:`safe_line` is :func:`safe_text` of a whole output line, and neutralises what a CI system
  would interpret: a line starting (after blanks) with ``::`` and ``##[`` / ``##vso[`` anywhere.
* :func:`safe_lines` does it line by line for a block of text, keeping its line breaks.
* :func:`terminal_line` is :func:`safe_line`, wrapped at 100 columns (or the terminal's width) with
  an indent when the stream is a terminal; piped (CI logs, scripts) a line stays one line.

Ordinary (printable) text passes through byte for byte.
"""

from __future__ import annotations

import re
import shutil
import sys
import textwrap
from typing import Any, TextIO

# C0 controls, DEL, C1 controls, the line/paragraph separators (U+2028/9) and the bidi controls
# (U+200E/F, U+202A-202E, U+2066-2069) that reorder what a terminal shows.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# GitHub Actions workflow commands: "::" at the start of a line, leading blanks ignored.
_WORKFLOW_COMMAND = re.compile(r"^(\s*):(?=:)")
# Azure Pipelines logging commands and formatting ("##vso[", "##["), found anywhere in a line.
_LOGGING_COMMAND = re.compile(r"#(?=#(?:vso)?\[)", re.IGNORECASE)


# The same without tab, line feed and carriage return: the blanks of HTML, shown as blanks there.
_CONTROL_BUT_BLANKS = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]"
)


def _escape(match: re.Match[str]) -> str:
    return match.group().encode("unicode_escape").decode("ascii")


def safe_text(value: Any, *, keep_blanks: bool = False) -> str:
    """`value` as text with every control character escaped (``\\n``, ``\\x1b``, ``\\u202e``);
    with `keep_blanks`, tab, line feed and carriage return are kept (HTML, where they are blanks)."""
    text = "" if value is None else str(value)
    return (_CONTROL_BUT_BLANKS if keep_blanks else _CONTROL).sub(_escape, text)


def safe_line(value: Any) -> str:
    """One output line: control characters escaped, CI commands (``::x``, ``##vso[``, ``##[``)
    neutralised by writing their first character as ``\\x3a`` / ``\\x23``."""
    line = safe_text(value)
    line = _WORKFLOW_COMMAND.sub(r"\1\\x3a", line)
    return _LOGGING_COMMAND.sub(r"\\x23", line)


def safe_lines(text: str) -> str:
    """A block of output text made safe line by line (:func:`safe_line`), its line breaks kept."""
    return "".join(safe_line(line) + "\n" for line in text.split("\n"))[:-1]


WRAP_COLUMNS = 100


def terminal_line(value: Any, stream: TextIO | None = None, indent: str = "    ") -> str:
    """:func:`safe_line` of `value`; where `stream` (default stdout) is a terminal, wrapped at
    WRAP_COLUMNS (or the terminal's width, if narrower) with `indent` before each continuation line,
    so its start (``file:line: ...``) stays on the first line. Off a terminal it stays one line: one
    problem per line for grep, scripts and CI logs."""
    line = safe_line(value)
    stream = stream or sys.stdout
    if not stream.isatty():
        return line
    width = min(WRAP_COLUMNS, shutil.get_terminal_size().columns)
    wrapped = textwrap.fill(
        line, width, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False
    )
    return safe_lines(wrapped)
