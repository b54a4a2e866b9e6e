"""What a paste adds around any tool's output, removed before ``bench parse`` reads it.

Outputs reach ``bench parse`` copied from terminals, issue threads and mails: a byte-order mark,
CRLF line ends, ANSI colour codes, the blanks a terminal copy pads each line with, and Markdown
code fences (```` ``` ````, ``~~~``), which become empty lines so that the line numbers a parser
names in its errors stay those of the file. Shell prompt lines stay: the command typed at a
prompt says what the output is (``ethtool -S eth0``, ``mpirun ... broadcast_perf``), and each
parser reads or skips it. The noise of one tool (logger and launcher prefixes, quotes) is the
tool's own parser's business (``tools/textclean.py``).
"""

from __future__ import annotations

from benchharness.tools.textclean import is_fence, strip_ansi


def unpaste(text: str) -> str:
    """``text`` without BOM, CRs before LF, ANSI codes and trailing blanks; fence lines emptied."""
    text = strip_ansi(text.lstrip("\ufeff").replace("\r\n", "\n"))
    return "\n".join("" if is_fence(line) else line.rstrip(" \t") for line in text.split("\n"))
