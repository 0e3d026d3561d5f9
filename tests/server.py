"""Run the real frontdesk server (`python -m app serve`, granian) on 127.0.0.1 for a test, and stop it
cleanly: `with run_server(data_dir, admin_token="t") as base_url: ...`."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 15.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_until_healthy(base_url: str, process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    with httpx.Client(timeout=2.0) as client:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"the server exited with {process.returncode}:\n{log.read_text()[-4000:]}")
            with contextlib.suppress(httpx.TransportError):
                if client.get(f"{base_url}/healthz").status_code == 200:
                    return
            time.sleep(0.1)
    raise RuntimeError(f"the server did not become healthy in {START_TIMEOUT_S} s:\n{log.read_text()[-4000:]}")


def _stop(process: subprocess.Popen) -> None:
    """SIGINT first (granian shuts down gracefully; the lifespan checkpoints every tenant), then kill."""
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextlib.contextmanager
def run_server(data_dir: Path, **settings: object) -> Iterator[str]:
    """Serve `data_dir` on a free port; each keyword becomes FRONTDESK_<NAME> (e.g. admin_token).

    The periodic crawler is off unless `scheduler=True` is passed, and one worker serves unless
    `workers=N` is (tests/test_workers.py starts several). Yields the base URL.
    """
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("FRONTDESK_")}
    env.update({"FRONTDESK_SCHEDULER": "false", "FRONTDESK_LOG_LEVEL": "warning", "FRONTDESK_WORKERS": "1"})
    env.update({f"FRONTDESK_{name.upper()}": str(value) for name, value in settings.items()})
    base_url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory(prefix="frontdesk-server-") as logs:
        log = Path(logs) / "server.log"
        with open(log, "wb") as output:
            process = subprocess.Popen(
                [sys.executable, "-m", "app", "serve", "--host", "127.0.0.1", "--port", str(port),
                 "--data-dir", str(data_dir)],
                cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
            )
            try:
                _wait_until_healthy(base_url, process, log)
                yield base_url
            finally:
                _stop(process)
