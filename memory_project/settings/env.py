"""Reading an environment variable, typed (healthchecks' `envbool`, `envint`): a value that does not
parse stops the start with the variable's name, rather than running on a default nobody chose."""

from __future__ import annotations

import ipaddress
import os

from django.core.exceptions import ImproperlyConfigured


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    if value.lower() in ("1", "true", "yes", "on"):
        return True
    if value.lower() in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"{name} must be a boolean (1/0, true/false), got {value!r}")


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {value!r}") from None


def env_float(name: str, default: float) -> float:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return float(value)
    except ValueError:
        raise ValueError(f"{name} must be a number, got {value!r}") from None


def env_networks(name: str, default: str) -> list[str]:
    """Comma-separated networks (blanks dropped); one that does not parse stops the start, named."""
    spellings = [n.strip() for n in env_str(name, default).split(",") if n.strip()]
    for spelling in spellings:
        try:
            ipaddress.ip_network(spelling, strict=False)
        except ValueError as error:
            raise ImproperlyConfigured(f"{name}: {spelling!r} is not a network ({error})") from None
    return spellings


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    """One of `choices`; anything else stops the start."""
    value = env_str(name, default)
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(c or '(empty)' for c in choices)}, got {value!r}")
    return value


def env_days_by_type(name: str) -> dict[str, float]:
    """"episodic=90,task=14": days per memory type (an empty value: none)."""
    out: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in os.environ.get(name, "").split(","))):
        memory_type, _, days = part.partition("=")
        try:
            out[memory_type.strip()] = float(days)
        except ValueError:
            raise ValueError(f"{name} must look like 'episodic=90,task=14', got {part!r}") from None
    return out
