"""The exception hierarchy. Library code raises these; only the CLI turns them into exit codes."""

import re

_URL_PASSWORD = re.compile(r"(\b[a-zA-Z][\w+.-]*://[^/\s:@]*:)[^@\s/]*@")


def redact(text: object) -> str:
    """`text` with the password of every URL in it masked: scheme://user:***@host."""
    return _URL_PASSWORD.sub(r"\1***@", str(text))



class HarnessError(Exception):
    """A failure the user can act on; its message is one line that names the problem."""

    exit_code = 1


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
