"""The operator console in a real browser: headless Chromium (Debian's `chromium` and
`chromium-driver`, installed by .ci/install) driven by Selenium, against the console served
by uvicorn on a free loopback port, as nmc_console on this test's database.

An operator logs in with an IAM token, sees a mislukt task with its error class, reopens it
(confirmation page, explanation, button), sees it open, lets a worker's wissen round run, and
sees it done; the audit trail shows the action. On the way a PNG of each view is taken: into
a temporary directory, or, to renew the screenshots the documentation shows, into the directory
NMC_CONSOLE_SCREENSHOTS names (`NMC_CONSOLE_SCREENSHOTS=docs/console pytest …`). The
personal-data scan sees every page the browser was served (nmc.console.app is wrapped in
privacy_scan.py).
"""

import base64
import os
import secrets
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from consoletest import Populated, token

from nmc.console.app import create_app
from nmc.database import with_overrides
from nmc.kek_ring import KekRing
from nmc.worker.config import WorkerConfig
from nmc.worker.loop import Worker
from nmc_dev.sim.server import start_in_thread

# A test run leaves the checkout alone: the documentation's PNGs change only when asked.
SCREENSHOTS = Path(
    os.environ.get("NMC_CONSOLE_SCREENSHOTS")
    or Path(tempfile.gettempdir()) / "nmc-console-screenshots"
)
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")

MISSING = (
    "headless Chromium is missing: apt-get install chromium chromium-driver "
    "(.ci/install installs them as root)"
)
if os.environ.get("CI") == "true" and (CHROMIUM is None or CHROMEDRIVER is None):
    # CI installs them (.ci/install): a skip there would hide that the console went untested.
    raise RuntimeError(MISSING)
webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
pytestmark = pytest.mark.skipif(CHROMIUM is None or CHROMEDRIVER is None, reason=MISSING)


@pytest.fixture
def console_url(console_env: str, data: Populated) -> Iterator[str]:
    server = start_in_thread(create_app())
    yield server.url
    server.stop()


@pytest.fixture
def browser() -> Iterator["webdriver.Chrome"]:
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in (
        "--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
        "--window-size=1440,900", "--lang=nl-NL", "--hide-scrollbars",
    ):  # fmt: skip
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.implicitly_wait(2)
    yield driver
    driver.quit()


def screenshot(driver, name: str) -> None:
    """The whole page (not only the window) as a PNG, through the DevTools protocol."""
    size = driver.execute_cdp_cmd("Page.getLayoutMetrics", {})["cssContentSize"]
    clip = {"x": 0, "y": 0, "width": size["width"], "height": min(size["height"], 4000)}
    shot = driver.execute_cdp_cmd(
        "Page.captureScreenshot",
        {"format": "png", "captureBeyondViewport": True, "clip": {**clip, "scale": 1}},
    )
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    (SCREENSHOTS / f"{name}.png").write_bytes(base64.b64decode(shot["data"]))


async def wissen_round(db_url: str, tmp_path: Path, ring: KekRing) -> int:
    """One round of a real worker that runs the wissen kind only (its SQL, as nmc_worker),
    with the ring the data was sealed under (a worker refuses one without it)."""
    config = WorkerConfig(
        database_url=with_overrides(db_url, user="nmc_worker"),
        notifynl_url="http://127.0.0.1:9",  # never called by this kind
        notifynl_api_key=f"ongebruikt-{uuid.uuid4()}-{uuid.uuid4()}",
        profielservice_url=None,
        ldv_url=None,
        ldv_file=tmp_path / "ldv.jsonl",
        kinds=("wissen",),
        pool_size=2,
    )
    async with Worker.started(config, ring=ring, pseudonym_key=secrets.token_bytes(32)) as worker:
        return await worker.run_once("wissen")


async def test_log_in_see_a_mislukt_task_reopen_it_and_see_it_done(
    browser,
    console_url: str,
    data: Populated,
    conn: psycopg.Connection,
    db_url: str,
    tmp_path,
    ring: KekRing,
):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.wait import WebDriverWait

    def text(selector: str) -> str:
        return browser.find_element(By.CSS_SELECTOR, selector).text

    def arrive(url: str) -> None:
        """Wait until the click's navigation has landed on `url`."""
        WebDriverWait(browser, 10).until(expected_conditions.url_to_be(url))

    # Not logged in: every page leads to the login.
    browser.get(console_url + "/mislukt")
    arrive(console_url + "/login")
    screenshot(browser, "aanmelden")
    browser.find_element(By.ID, "token").send_keys(token(sub="beheerder-anna"))
    browser.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    arrive(console_url + "/statussen")
    assert "beheerder-anna" in text(".wie")
    assert "definitief-bezorgd" in text("main")
    screenshot(browser, "statussen")

    for path, name, expected in (
        ("/achterstand", "achterstand", "ongeldig-melden"),
        ("/webhooks", "webhooks", "gepauzeerd"),
        ("/onbevestigd", "onbevestigd", "DV Gemeente Voorbeeldstad (test)"),
        ("/budget", "budget", "service standaard"),
        ("/onderhoud", "onderhoud", "event_x000000000000"),
    ):
        browser.get(console_url + path)
        assert expected in text("main"), path
        screenshot(browser, name)

    # The mislukt task, with its error class; reopen it.
    browser.get(console_url + "/mislukt")
    row = browser.find_element(By.ID, f"taak-{data.mislukt_wissen}")
    assert "wissen" in row.text and "SerializationFailure" in row.text
    screenshot(browser, "mislukt")
    row.find_element(By.LINK_TEXT, "Heropenen…").click()
    arrive(f"{console_url}/taken/{data.mislukt_wissen}/heropenen")
    browser.find_element(By.ID, "toelichting").send_keys("Database-storing voorbij (RFC-1234)")
    screenshot(browser, "heropenen-bevestigen")
    browser.find_element(By.CSS_SELECTOR, "button.gevaar").click()
    arrive(f"{console_url}/taken/{data.mislukt_wissen}?gedaan=heropend")
    assert text("#staat") == "open"

    # A worker's wissen round takes it; the console shows it done.
    assert await wissen_round(db_url, tmp_path, ring) == 1
    browser.refresh()
    assert text("#staat") == "done"
    screenshot(browser, "taak-done")
    assert conn.execute(
        "SELECT gewist_op IS NOT NULL FROM nmc.notificatie AS n"
        " INNER JOIN nmc.taak AS t ON t.notificatie_id = n.id WHERE t.id = %s",
        [data.mislukt_wissen],
    ).fetchone() == (True,)

    browser.get(console_url + "/beheeracties")
    trail = text("main table")
    assert "heropen-taak" in trail and "console:beheerder-anna" in trail
    screenshot(browser, "beheeracties")

    browser.get(f"{console_url}/notificaties/{data.aangenomen}")
    assert text("#status") == "aangenomen"
    screenshot(browser, "notificatie")
    assert "mislukt" not in {e.text for e in browser.find_elements(By.CSS_SELECTOR, "#staat")}
