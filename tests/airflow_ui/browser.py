"""Headless Chromium driven by selenium through Debian's chromedriver (``make chromium``)."""
from __future__ import annotations

import shutil
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait


def chromium(profile: Path) -> webdriver.Chrome:
    binary, driver = shutil.which("chromium"), shutil.which("chromedriver")
    assert binary and driver, "Chromium or chromedriver is missing: run `make chromium`"
    opts = webdriver.ChromeOptions()
    opts.binary_location = binary
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
              "--window-size=1400,1000", f"--user-data-dir={profile}"):
        opts.add_argument(a)
    return webdriver.Chrome(service=Service(driver), options=opts)


class UI:
    """The steps a user takes in Airflow 3's UI, by what the UI shows (labels, test ids)."""

    def __init__(self, driver: webdriver.Chrome, url: str, shots: Path):
        self.d, self.url, self.shots = driver, url, shots
        self.wait = WebDriverWait(driver, 60)
        shots.mkdir(parents=True, exist_ok=True)

    def shot(self, name: str) -> Path:
        path = self.shots / f"{name}.png"
        self.d.save_screenshot(str(path))
        return path

    def find(self, css: str):
        return self.wait.until(EC.element_to_be_clickable((By.CSS_SELECTOR, css)))

    def log_in(self, user: str, password: str, next_path: str = "/") -> None:
        self.d.get(self.url + next_path)
        self.wait.until(EC.presence_of_element_located((By.NAME, "username"))).send_keys(user)
        self.d.find_element(By.NAME, "password").send_keys(password)
        self.shot("01-login")
        self.d.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        self.wait.until(lambda d: "/auth/login" not in d.current_url)

    def open_dag(self, dag_id: str) -> None:
        self.d.get(f"{self.url}/dags/{dag_id}")
        self.find("[data-testid=trigger-dag-button]")

    def unpause(self) -> None:
        toggle = self.find("[data-testid=toggle-pause]")
        if toggle.get_attribute("data-state") != "checked":
            toggle.click()
        self.wait.until(lambda d: d.find_element(By.CSS_SELECTOR, "[data-testid=toggle-pause]")
                        .get_attribute("data-state") == "checked")

    def backfill(self, first_day: str, last_day: str, reprocess: str = "none", shot: str = "03-backfill-dialog") -> str:
        """Trigger -> Backfill -> From/To -> Reprocess Behavior (``none``: Missing Runs,
        ``completed``: All Runs) -> Run Backfill; returns the dialog's "N runs" line."""
        self.find("[data-testid=trigger-dag-button]").click()
        self._radio("backfill")
        for i, (day, time) in enumerate(((first_day, "00:00"), (last_day, "00:00"))):
            self.wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "[data-testid=datetime-input]")) == 2)
            self.d.find_elements(By.CSS_SELECTOR, "[data-testid=datetime-input]")[i].click()
            pop = self.find("[data-scope=popover][data-part=content][data-state=open]")
            pop.find_element(By.CSS_SELECTOR, "input[placeholder='YYYY/MM/DD']").send_keys(day.replace("-", "/"))
            clock = pop.find_element(By.CSS_SELECTOR, "input[placeholder='HH:mm']")
            clock.send_keys(time)
            clock.send_keys(Keys.ESCAPE)
        self._radio(reprocess)
        summary = self.wait.until(EC.presence_of_element_located(
            (By.XPATH, "//*[contains(text(), 'runs will be triggered')]"))).text
        self.shot(shot)
        button = self.wait.until(EC.element_to_be_clickable((By.XPATH, "//button[normalize-space()='Run Backfill']")))
        button.click()
        self.wait.until(EC.invisibility_of_element_located((By.XPATH, "//button[normalize-space()='Run Backfill']")))
        return summary

    def _radio(self, value: str) -> None:
        radio = self.wait.until(EC.presence_of_element_located((By.XPATH, f"//input[@value='{value}']")))
        self.d.execute_script("arguments[0].click()", radio)   # the radio input itself is visually hidden
