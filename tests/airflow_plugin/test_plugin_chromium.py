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
    # the README's command, from the checkout (no --app-dir); served at /lakehouse/ as under Airflow
    proc = subprocess.Popen([PYTHON, "-m", "lakeformat.pipeline.airflow.page", "--port", str(port)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/lakehouse/"
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


def _fits_in(d, width: int) -> None:
    """At ``width`` px the page scrolls only down: no panel scrolls sideways, no number or size
    ("1.4 MiB") breaks over two lines."""
    from selenium.webdriver.common.by import By
    d.set_window_size(width, HEIGHT)
    viewport = d.execute_script("return document.documentElement.clientWidth")
    assert viewport <= width and d.execute_script("return document.documentElement.scrollWidth") <= viewport
    wide = d.execute_script("return [...document.querySelectorAll('.scroll')]"
                            ".filter(e => e.scrollWidth > e.clientWidth).map(e => e.previousSibling.textContent)")
    assert wide == [], f"panels scrolling sideways at {width} px: {wide}"
    cells = d.find_elements(By.CSS_SELECTOR, "td.num, td.t")
    assert any(c.text.endswith(("B", "KiB", "MiB")) for c in cells)
    wrapped = [c.text for c in cells if c.text and d.execute_script(
        "const r = document.createRange(); r.selectNodeContents(arguments[0]); "
        "return r.getClientRects().length", c) > 1]
    assert wrapped == [], f"cells wrapped at {width} px: {wrapped}"


def test_table_page_in_chromium_filter_history_and_audits(tmp_path, served_page):
    """selenium + Debian's chromedriver: from the tables page to a table's page, a filter typed
    into the form, the history chart drawn, the failed audit with its expectation, and a
    hostile value shown as text (no script ran)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from tests.airflow_plugin.lakehouse import BAD_DAY, HOSTILE_NOTE, PENDING_DAY
    from tests.airflow_ui.browser import chromium

    shots = tmp_path / "screenshots"
    shots.mkdir()
    d = chromium(tmp_path / "selenium-profile")
    try:
        wait = WebDriverWait(d, 30)
        d.get(served_page)
        d.find_element(By.CSS_SELECTOR, 'section[data-identifier="demo.user_behavior"] a.open').click()
        wait.until(lambda d: "/lakehouse/table/demo.user_behavior" in d.current_url)
        box = d.find_element(By.NAME, "filter")
        box.clear()
        box.send_keys("behavior = 'buy' and user_id > 10")
        d.find_element(By.CSS_SELECTOR, "form.filter button").click()
        wait.until(lambda d: "filter=" in d.current_url)
        d.save_screenshot(str(shots / "table-page.png"))
        cells = [[td.text for td in tr.find_elements(By.TAG_NAME, "td")]
                 for tr in d.find_elements(By.CSS_SELECTOR, "table.preview tbody tr")]
        assert sorted(cells) == [["11", "buy", "2024-06-01"], ["12", "buy", "2024-06-01"]]
        bars = d.find_elements(By.CSS_SELECTOR, "svg.history rect.hbar")
        assert len(bars) == 3 * 4                                   # three panels, four snapshots
        assert all(b.size["width"] > 0 and b.size["height"] > 0 for b in bars)
        assert {b.get_attribute("data-kind") for b in bars} == {"APPEND"}
        stages = {r.get_attribute("data-stage"): r for r in d.find_elements(By.CSS_SELECTOR, "tr.stage")}
        assert set(stages) == {BAD_DAY, PENDING_DAY}
        assert stages[BAD_DAY].get_attribute("data-audit") == "failed"
        assert "expect_column_values_to_be_in_set(column='behavior'" in stages[BAD_DAY].text
        assert "1 of 2 rows unexpected, e.g. oops" in stages[BAD_DAY].text
        assert stages[PENDING_DAY].get_attribute("data-state") == "pending"
        runs = d.find_elements(By.CSS_SELECTOR, "tr.bucket td.runs")
        assert [r.text for r in runs] == ["3", "1"] and len(d.find_elements(By.CSS_SELECTOR, ".trigger")) == 2
        # every stage shows its rows: the pending stage's own, the discarded one's from its audit
        assert {k: r.find_elements(By.CSS_SELECTOR, "td.num")[0].text for k, r in stages.items()} == \
            {BAD_DAY: "2", PENDING_DAY: "2"}
        _fits_in(d, WIDTH)

        d.find_element(By.NAME, "filter").clear()
        d.find_element(By.NAME, "filter").send_keys("price > 1")
        d.find_element(By.CSS_SELECTOR, "form.filter button").click()
        err = wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, ".filter-error"))[0].text
        assert "no column 'price'" in err and "user_id, behavior, dt" in err

        d.get(served_page + "table/scratch.notes")
        assert HOSTILE_NOTE in [td.text for td in d.find_elements(By.CSS_SELECTOR, "table.preview td")]
        assert d.title != "pwned" and not d.find_elements(By.CSS_SELECTOR, "table.preview b")
        d.save_screenshot(str(shots / "hostile.png"))
    finally:
        d.quit()
