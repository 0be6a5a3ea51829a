"""Test servers in subprocesses: a free loopback port, and waiting until one answers."""
import socket
import subprocess
import time
import urllib.request


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_serving(url: str, proc: subprocess.Popen, what: str, timeout: float) -> None:
    """Return once ``url`` answers; fail naming ``what`` if ``proc`` exits or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            urllib.request.urlopen(url, timeout=5).close()
            return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                out = proc.stdout.read().decode()[-3000:] if proc.stdout else ""
                raise RuntimeError(f"{what} did not serve {url} (exit {proc.poll()}) {out}") from None
            time.sleep(0.1)
