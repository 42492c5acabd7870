"""Figures the hardening suites measure, printed at the end of the run
(pytest_terminal_summary in conftest) and copied into docs/reliability.md."""

FIGURES: dict[str, str] = {}


def record(name: str, value) -> None:
    FIGURES[name] = str(value)
