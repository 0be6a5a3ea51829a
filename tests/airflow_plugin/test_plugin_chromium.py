"""The Lakehouse page in a real headless Chromium (Debian's ``chromium``, installed by
``make chromium``): served by uvicorn on a free port, rendered to a 1280x900 screenshot that
is decoded and checked, and to a DOM holding the tables and their sorted-run counts."""
from __future__ import annotations

import os
import shutil
import subprocess

import numpy as np
import pytest

from tests.airflow_plugin.conftest import PYTHON, airflow_env
from tests.airflow_plugin.lakehouse import EXPECTED_RUNS, build_lakehouse
from tests.airflow_plugin.png import distinct_colors, read_png
from tests.airflow_plugin.test_plugin_page import _runs_in_html
from tests.servers import free_port, wait_until_serving

WIDTH, HEIGHT = 1280, 900
HEADER_RGB = (0x1D, 0x24, 0x33)     # the page's header background (page.py _CSS)
RUNBAR_RGB = (0xF2, 0x99, 0x4A)     # the sorted-run bars


def _chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    assert path, "Chromium is not installed: run `make chromium` (Debian package chromium)"
    return path


@pytest.fixture
def served_page(tmp_path):
    wh, config = build_lakehouse(tmp_path)
    home = tmp_path / "airflow"
    home.mkdir()
    env = airflow_env(home, wh)
    env["LAKEFORMAT_CONFIG"] = config
    port = free_port()
    proc = subprocess.Popen([PYTHON, "-m", "uvicorn", "--factory", "lakeformat.pipeline.airflow.page:standalone_app",
                             "--host", "127.0.0.1", "--port", str(port)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    try:
        wait_until_serving(url + "api/tables", proc, "uvicorn", 60)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _run_chromium(tmp_path, *args: str) -> subprocess.CompletedProcess:
    profile = tmp_path / "chromium-profile"
    cmd = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           "--no-first-run", f"--user-data-dir={profile}", f"--window-size={WIDTH},{HEIGHT}", *args]
    env = {**os.environ, "HOME": str(tmp_path)}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)


def test_plugin_page_in_headless_chromium(tmp_path, served_page):
    shot = tmp_path / "lakehouse.png"
    proc = _run_chromium(tmp_path, f"--screenshot={shot}", served_page)
    assert shot.exists(), f"no screenshot: {proc.stdout[-2000:]} {proc.stderr[-2000:]}"
    pixels = read_png(shot.read_bytes())
    assert pixels.shape[:2] == (HEIGHT, WIDTH)
    assert distinct_colors(pixels) > 100, "the screenshot is (nearly) blank"
    rgb = pixels[..., :3]
    assert tuple(rgb[5, 5]) == HEADER_RGB                   # the header bar was drawn
    assert int(np.all(rgb == RUNBAR_RGB, axis=-1).sum()) > 50, "no sorted-run bars drawn"

    dom = _run_chromium(tmp_path, "--dump-dom", served_page)
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    for name in ("user_behavior", "item_price", "not_yet", "scratch.notes"):
        assert name in html
    assert _runs_in_html(html) == EXPECTED_RUNS
