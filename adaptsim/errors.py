"""Errors a user can act on: the CLI prints them as one line, never as a traceback."""


class UserError(Exception):
    """Bad input or settings; the message says what and where (file, line, setting)."""


class DataError(UserError):
    """A dataset file is missing or malformed."""

    def __init__(self, path, message: str, line: int | None = None):
        where = f"{path}:{line}" if line is not None else f"{path}"
        super().__init__(f"{where}: {message}")
        self.path, self.line, self.message = path, line, message

    def __reduce__(self):  # picklable, so a parallel launcher's worker can hand it back to the main process
        return type(self), (self.path, self.message, self.line)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread like SIGINT's KeyboardInterrupt, so a job unwinds and records that
    it was interrupted instead of dying with summary.json still saying `running`."""

    signal_name = "SIGTERM"
    exit_code = 143  # 128 + SIGTERM, what a shell reports for a process killed by it


def raise_terminated(signum, frame):
    """The SIGTERM handler of a command that must record how it ended (a job, a serve session)."""
    raise Terminated()
