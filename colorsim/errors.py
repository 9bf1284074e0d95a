"""One exception type for every user-facing refusal."""


class ConfigError(ValueError):
    """Invalid user input: raised before anything is built or run."""


class RunError(RuntimeError):
    """A run started but did not produce a complete result."""
