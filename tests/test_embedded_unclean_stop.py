"""The embedded server survives unclean stops: processes attaching to it are
killed at random moments (during start, mid-write of the process list, at
exit), the list is left empty, cut or garbled, and the next start works."""

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memory_project.embedded_db import PROCESS_LIST, stop_embedded_server

ROOT = Path(__file__).resolve().parent.parent
# Outside pytest's temp root: another pytest run on the machine resets that root.
VAR = ROOT / "var" / "unclean-stop-test"
ATTACH = ("import sys; from pathlib import Path; from memory_project.embedded_db import embedded_database_settings "
          "as attach; attach(Path(sys.argv[1]), 'probe'); print('attached')")
CORRUPTIONS = ["", "[12", "nonsense", "[1, 2,", "{}", '["x"]']


def _attach() -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", ATTACH, str(VAR)], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})


def _attach_cleanly() -> str:
    process = _attach()
    out, err = process.communicate(timeout=180)
    assert process.returncode == 0 and "attached" in out, err[-2000:]
    return err


@pytest.mark.slow
def test_killed_processes_and_a_corrupt_process_list_never_stop_the_next_start():
    shutil.rmtree(VAR, ignore_errors=True)
    rng = random.Random(20261126)
    try:
        first = _attach()  # killed during its first start (initdb): the next start sets aside and re-initialises
        time.sleep(rng.uniform(0.2, 1.0))
        first.kill()
        first.wait()
        _attach_cleanly()
        repaired = 0
        for round_number in range(10):
            process = _attach()
            time.sleep(rng.uniform(0.0, 1.5))
            if round_number % 3 == 0:
                process.send_signal(signal.SIGTERM)
                time.sleep(0.05)
            process.kill()
            process.wait()
            if round_number % 2 == 0:  # what an in-place rewrite killed half-way leaves behind
                (VAR / "pgdata" / PROCESS_LIST).write_text(CORRUPTIONS[round_number % len(CORRUPTIONS)])
            err = _attach_cleanly()
            repaired += "was unreadable" in err
        assert repaired >= 4
    finally:
        try:
            stop_embedded_server(VAR)
        finally:
            shutil.rmtree(VAR, ignore_errors=True)
