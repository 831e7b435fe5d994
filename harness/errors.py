"""The exception hierarchy, and the one place where passwords are masked.

Library code raises these; only the CLI turns them into exit codes. Every message of every
HarnessError passes through `redact` when the exception is made, so a password in a database URL
never reaches a terminal, a log or a notebook's traceback, whichever layer printed it.
"""

import re

# scheme://user:PASSWORD@host: the password runs to the last "@" before the host (libpq accepts "/",
# spaces and ":" in it), but not past the end of the line or into another URL.
_URL_PASSWORD = re.compile(r"(\b[a-zA-Z][\w+.-]*://[^/\s:@]*:)(?:(?!://)[^@\n])*@")
# ?password=... or &password=... (a URL's query) and password=... (a libpq keyword string).
_KEYWORD_PASSWORD = re.compile(r"(\bpassword\s*=\s*)('[^']*'|[^&\s]*)", re.IGNORECASE)


def redact(text: object) -> str:
    """`text` with every password masked: scheme://user:***@host, ?password=***, password=***."""
    text = _URL_PASSWORD.sub(r"\1***@", str(text))
    return _KEYWORD_PASSWORD.sub(r"\1***", text)


def one_line(text: str) -> str:
    """`text` with line breaks and other unprintable characters (a file name may hold any) escaped."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class HarnessError(Exception):
    """A failure the user can act on; its message is one line that names the problem (passwords
    masked, unprintable characters escaped)."""

    exit_code = 1

    def __init__(self, message: object = "", *args):
        super().__init__(one_line(redact(message)), *args)


class SpecError(HarnessError):
    """A case id, suite, filter or option value that names nothing we know."""

    exit_code = 2


class IllegalShapeError(SpecError):
    """A well-formed case that the PTX ISA does not allow (shape, dtype or operand mode)."""


class CompileError(HarnessError):
    """NVRTC rejected a rendered probe; carries the compiler log."""

    def __init__(self, message: str, log: str = ""):
        super().__init__(message)
        self.log = log


class DeviceError(HarnessError):
    """No usable GPU: none visible, the wrong architecture, or a bad index."""

    exit_code = 3


class StoreError(HarnessError):
    """The results database cannot be opened, read or written as asked."""

    exit_code = 4


class RunInterrupted(HarnessError):
    """SIGINT or SIGTERM stopped a run; what it measured is stored and the run can be resumed."""

    exit_code = 130
