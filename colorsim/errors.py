"""The exception types of every user-facing refusal.

The command line turns each of them into one line on stderr and exit
status 2; anything else is a bug in the suite.
"""


class ConfigError(ValueError):
    """Invalid user input: raised before anything is built or run."""


class RunError(RuntimeError):
    """A run started but did not produce a complete result."""


class ResultsError(ValueError):
    """A directory that is not a complete, undamaged run."""


class Interrupted(BaseException):
    """The process was told to stop (SIGINT, SIGTERM, SIGHUP).

    A BaseException, like KeyboardInterrupt, so that no ``except
    Exception`` swallows it on the way out: every ``finally`` runs, the
    emulator is killed and the partial run is recorded as failed.
    """

    def __init__(self, signame: str):
        super().__init__(signame)
        self.signame = signame


def not_utf8(path, e: UnicodeDecodeError) -> ConfigError:
    """A text file of the user's that is not UTF-8: say where."""
    bad = e.object[e.start:e.start + 1].hex()
    line = e.object[:e.start].count(b"\n") + 1
    return ConfigError(f"{path} is not UTF-8 text: byte 0x{bad} on line "
                       f"{line}; save it as UTF-8")


def read_user_text(path) -> str:
    """A text file the user wrote (machines, experiments): its text, or a
    one-line ConfigError saying why it cannot be read."""
    from pathlib import Path
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"cannot read {path}: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise not_utf8(path, e) from None
