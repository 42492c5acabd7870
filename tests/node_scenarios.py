"""Running the JavaScript side of the suite: the TypeScript SDK is built once per test session, and
each node scenario (tests/node/*.mjs) runs once per test and reports the checks it passed by name.

Node and npm come from the machine; the packages from `npm ci` in clients/typescript and tests/node
(the Makefile's install step, from the committed lock files)."""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SDK = ROOT / "clients" / "typescript"
SCENARIOS = ROOT / "tests" / "node"
NODE_TIMEOUT = 240


def _require(path: Path) -> None:
    if not (path / "node_modules").is_dir():
        pytest.fail(f"{path.relative_to(ROOT)}/node_modules is missing: run `make install` (npm ci)")


def node() -> str:
    found = shutil.which("node")
    if found is None:
        pytest.fail("node is not installed (Node 20 or newer; Debian: apt-get install nodejs npm)")
    return found


@functools.cache
def build_typescript_sdk() -> Path:
    """tsc, once per test session: dist/esm and dist/cjs of clients/typescript."""
    _require(SDK)
    done = subprocess.run(["npm", "run", "--silent", "build"], cwd=SDK, capture_output=True, text=True,
                          timeout=NODE_TIMEOUT)
    assert done.returncode == 0, f"the TypeScript SDK does not compile:\n{done.stdout}\n{done.stderr}"
    return SDK / "dist"


def run_scenario(script: str, *args: str, env: dict[str, str]) -> list[str]:
    """Run tests/node/<script> and return the names of the checks it passed (it fails on the first
    that does not, and the assertion shows node's output)."""
    _require(SCENARIOS)
    full_env = {**os.environ, "MEM0_TELEMETRY": "false", "NO_COLOR": "1", **env}
    done = subprocess.run([node(), script, *args], cwd=SCENARIOS, env=full_env, capture_output=True, text=True,
                          timeout=NODE_TIMEOUT)
    assert done.returncode == 0, f"node {script} {' '.join(args)} failed:\n{done.stderr[-6000:]}\n{done.stdout[-2000:]}"
    last = done.stdout.strip().splitlines()[-1]
    return json.loads(last)["checks"]
