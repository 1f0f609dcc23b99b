"""Errors a user can fix. The CLI prints them as one line and exits with code 2."""


class MpccError(Exception):
    """An error caused by user input or the environment, with a one-line message that names
    the problem and the fix. Never raised for bugs."""

    exit_code = 2


class ScenarioError(MpccError):
    """A scenario (or other input) file is invalid: names the file, the field and the fix."""

    def __init__(self, source: str, field: str, problem: str, fix: str):
        self.source, self.field, self.problem, self.fix = source, field, problem, fix
        super().__init__(f"{source}: {field}: {problem} (fix: {fix})")


class EnvironmentProblem(MpccError):
    """The machine lacks something (privilege, kernel feature, tool)."""
