"""The operator console in a real browser: headless Chromium (Debian's `chromium` and
`chromium-driver`, installed by .ci/install) driven by Selenium, against the console served
by uvicorn on a free loopback port, as nmc_console on this test's database.

By keyboard alone (Tab, Shift+Tab, Enter, Space, and every control it reaches showing its
focus), an operator logs in with an IAM token, takes the skip link and the nav to a mislukt
task with its error class, reopens it (task page, confirmation page, explanation, button),
sees it open, lets a worker's wissen round run, and sees it done; the audit trail shows the
action. axe-core (tools/axe, installed by .ci/install) checks every page and confirmation
page against WCAG 2.1 A and AA and its best practices, in the same browser: no findings, not
even one it cannot decide. Without axe-core that test is skipped, except under `CI=true`,
where the module fails, as it does without Chromium. On the way a PNG of each view is taken: into
a temporary directory, or, to renew the screenshots the documentation shows, into the directory
NMC_CONSOLE_SCREENSHOTS names (`NMC_CONSOLE_SCREENSHOTS=docs/console pytest …`). The
personal-data scan sees every page the browser was served (nmc.console.app is wrapped in
privacy_scan.py).
"""

import base64
import json
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
from nmc.crypto.kek_ring import KekRing
from nmc.database import with_overrides
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
# axe-core, pinned in tools/axe/package.json and installed there by .ci/install (npm ci).
AXE_JS = (
    Path(__file__).resolve().parents[2] / "tools" / "axe" / "node_modules" / "axe-core"
    / "axe.min.js"
)  # fmt: skip
# WCAG 2.1 level A and AA, the level government sites must meet (digitoegankelijk.nl), and
# axe's best practices (landmarks, heading order, one h1, the skip link's target).
AXE_TAGS = ("wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice")
AXE_VERSION = (
    json.loads((AXE_JS.parent / "package.json").read_text())["version"]
    if AXE_JS.is_file()
    else None
)

MISSING = (
    "headless Chromium is missing: apt-get install chromium chromium-driver "
    "(.ci/install installs them as root)"
)
if os.environ.get("CI") == "true" and (CHROMIUM is None or CHROMEDRIVER is None):
    # CI installs them (.ci/install): a skip there would hide that the console went untested.
    raise RuntimeError(MISSING)
WIDE, NARROW = (1440, 900), (320, 900)  # the window; narrow: as WCAG 1.4.10 Reflow measures
NO_AXE = "axe-core is missing: bash .ci/install (npm ci in tools/axe)"
if os.environ.get("CI") == "true" and not AXE_JS.is_file():
    raise RuntimeError(NO_AXE)
webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
pytestmark = pytest.mark.skipif(CHROMIUM is None or CHROMEDRIVER is None, reason=MISSING)


@pytest.fixture
def console_url(console_env: str, data: Populated) -> Iterator[str]:
    server = start_in_thread(create_app())
    yield server.url
    server.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator["webdriver.Chrome"]:
    """One browser for the module's tests (its start is most of their time)."""
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in (
        "--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
        f"--window-size={WIDE[0]},{WIDE[1]}", "--lang=nl-NL", "--hide-scrollbars",
    ):  # fmt: skip
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.implicitly_wait(2)
    driver.set_script_timeout(30)
    yield driver
    driver.quit()


@pytest.fixture
def browser_fresh(browser) -> "webdriver.Chrome":
    """The module's browser without the cookies of a test before (cookies ignore the port)."""
    browser.delete_all_cookies()
    return browser


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


class Keyboard:
    """The browser driven by the keyboard alone: keys go to whatever has the focus, as a
    person's would. Every element a Tab reaches must show that it has the focus."""

    def __init__(self, driver, limit: int = 60):
        from selenium.webdriver.common.action_chains import ActionChains
        from selenium.webdriver.common.keys import Keys

        self.driver, self.limit, self.keys, self.chains = driver, limit, Keys, ActionChains

    def press(self, *keys: str) -> None:
        self.chains(self.driver).send_keys(*keys).perform()

    def tab(self, *, back: bool = False) -> None:
        chain = self.chains(self.driver)
        if back:
            chain.key_down(self.keys.SHIFT).send_keys(self.keys.TAB).key_up(self.keys.SHIFT)
        else:
            chain.send_keys(self.keys.TAB)
        chain.perform()
        focus = self.focus()
        assert focus["ring"], f"no visible focus on {focus['html']}"

    def focus(self) -> dict:
        """What has the focus: its outerHTML (short) and whether its focus ring is visible
        (the console's: a solid outline of at least 2px, pages and header alike)."""
        return self.driver.execute_script(
            "const e = document.activeElement, s = getComputedStyle(e);"
            "return {html: e.outerHTML.slice(0, 120), id: e.id, text: e.textContent.trim(),"
            " ring: s.outlineStyle === 'solid' && parseFloat(s.outlineWidth) >= 2};"
        )

    def focused_matches(self, selector: str) -> bool:
        return self.driver.execute_script(
            "return document.activeElement.matches(arguments[0])", selector
        )

    def tab_to(self, selector: str) -> None:
        """Tab until the element `selector` names has the focus (within `limit` Tabs)."""
        for _ in range(self.limit):
            self.tab()
            if self.focused_matches(selector):
                return
        raise AssertionError(f"{selector} is not reachable by Tab")


async def test_by_keyboard_log_in_reopen_a_mislukt_task_and_see_it_done(
    browser_fresh,
    console_url: str,
    data: Populated,
    conn: psycopg.Connection,
    db_url: str,
    tmp_path: Path,
    ring: KekRing,
):
    """The reopen flow by keyboard alone (Tab, Shift+Tab, Enter, Space): log in, the skip
    link, the nav, list, task, confirmation, done."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.wait import WebDriverWait

    browser = browser_fresh
    keyboard = Keyboard(browser)
    enter, space = keyboard.keys.ENTER, keyboard.keys.SPACE

    def text(selector: str) -> str:
        return browser.find_element(By.CSS_SELECTOR, selector).text

    def arrive(url: str) -> None:
        """Wait until the key's navigation has landed on `url`."""
        WebDriverWait(browser, 10).until(expected_conditions.url_to_be(url))

    # Not logged in: every page leads to the login.
    browser.get(console_url + "/mislukt")
    arrive(console_url + "/login")
    screenshot(browser, "aanmelden")
    keyboard.tab_to("#token")
    keyboard.press(token(sub="beheerder-anna"))
    keyboard.tab_to("form button[type=submit]")
    keyboard.press(enter)
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

    # The first Tab of a page reaches the skip link; the nav leads to the mislukt tasks.
    browser.get(console_url + "/statussen")
    keyboard.tab()
    assert keyboard.focused_matches("a.naar-inhoud[href='#inhoud']"), keyboard.focus()["html"]
    keyboard.tab_to("nav a[href='/mislukt']")
    keyboard.press(enter)
    arrive(console_url + "/mislukt")
    row = browser.find_element(By.ID, f"taak-{data.mislukt_wissen}")
    assert "wissen" in row.text and "SerializationFailure" in row.text
    screenshot(browser, "mislukt")
    # The skip link passes the nav: the focus is on the page's content, the task's link next.
    keyboard.tab()
    keyboard.press(enter)
    assert keyboard.focus()["id"] == "inhoud"
    keyboard.tab_to(f"#taak-{data.mislukt_wissen} a[href='/taken/{data.mislukt_wissen}']")
    keyboard.press(enter)
    arrive(f"{console_url}/taken/{data.mislukt_wissen}")
    assert text("#staat") == "mislukt"
    keyboard.tab_to(f"a[href='/taken/{data.mislukt_wissen}/heropenen']")
    keyboard.press(enter)
    arrive(f"{console_url}/taken/{data.mislukt_wissen}/heropenen")
    keyboard.tab_to("#toelichting")
    keyboard.press("Database-storing voorbij (RFC-1234)")
    screenshot(browser, "heropenen-bevestigen")
    keyboard.tab()
    assert keyboard.focused_matches("button.gevaar")
    keyboard.tab()
    assert keyboard.focus()["text"] == "Annuleren"
    keyboard.tab(back=True)
    assert keyboard.focused_matches("button.gevaar")
    keyboard.press(space)
    arrive(f"{console_url}/taken/{data.mislukt_wissen}?gedaan=heropend")
    assert text("#staat") == "open"
    assert "heropend" in text("[role=status]")

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
    assert "Database-storing voorbij (RFC-1234)" in trail
    screenshot(browser, "beheeracties")

    browser.get(f"{console_url}/notificaties/{data.aangenomen}")
    assert text("#status") == "aangenomen"
    screenshot(browser, "notificatie")
    assert "mislukt" not in {e.text for e in browser.find_elements(By.CSS_SELECTOR, "#staat")}


def axe_findings(driver) -> list[tuple[str, int]]:
    """What axe-core finds on the page the browser shows, by the rules of AXE_TAGS: (rule id,
    number of elements) per violated rule, and ("needs review: " rule id, elements) per rule
    axe could not decide (a contrast on a one-digit cell, say), which counts as a finding
    too. axe is injected by WebDriver: the console's CSP allows no script of the page's own."""
    if not driver.execute_script("return typeof window.axe === 'object'"):
        driver.execute_script(AXE_JS.read_text())
    result = driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "axe.run(document, {runOnly: {type: 'tag', values: arguments[0]}}).then("
        " r => done(JSON.stringify(r.violations.map(v => [v.id, v.nodes.length]).concat("
        "  r.incomplete.map(v => ['needs review: ' + v.id, v.nodes.length])))),"
        " e => done(JSON.stringify([['axe failed: ' + e, 0]])));",
        list(AXE_TAGS),
    )
    return [tuple(finding) for finding in json.loads(result)]


def contrast(first: str, second: str) -> float:
    """WCAG's contrast ratio of two computed colours ("rgb(r, g, b)")."""

    def luminance(colour: str) -> float:
        channels = [int(c) / 255 for c in colour[colour.index("(") + 1 : -1].split(",")[:3]]
        r, g, b = (c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    lighter, darker = sorted((luminance(first), luminance(second)), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


def field_border_contrasts(driver) -> dict[str, float]:
    """Per form field of the page: its border's contrast with the background around it
    (WCAG 1.4.11, which axe does not check), the nearest ancestor with a background."""
    pairs = driver.execute_script(
        "return [...document.querySelectorAll('textarea, select, input:not([type=hidden])')]"
        ".map(e => { let p = e.parentElement;"
        " while (getComputedStyle(p).backgroundColor === 'rgba(0, 0, 0, 0)') p = p.parentElement;"
        " return [e.id || e.name, getComputedStyle(e).borderTopColor,"
        " getComputedStyle(p).backgroundColor]; });"
    )
    return {name: round(contrast(border, around), 2) for name, border, around in pairs}


@pytest.mark.skipif(not AXE_JS.is_file(), reason=NO_AXE)
def test_every_page_and_confirmation_page_meets_wcag_2_1_aa(
    browser_fresh, console_url: str, data: Populated
):
    """axe-core on every console view, every confirmation page (also with its refusal), the
    login (also with its notice), a done action's notice and an error page, each wide and
    320 px narrow: no findings, and no page wider than the narrow window."""
    from selenium.webdriver.common.by import By

    browser = browser_fresh
    found: dict[str, list[tuple[str, int]]] = {}

    def audit(name: str, path: str | None = None) -> None:
        """axe on the page as wide as the browser and as narrow as 1.4.10 Reflow asks (320
        CSS px, a 1280 px window at 400%), where the page must not scroll sideways."""
        if path is not None:
            browser.get(console_url + path)
        found[name] = axe_findings(browser)
        browser.set_window_size(*NARROW)
        found[f"{name} ({NARROW[0]} px)"] = axe_findings(browser) + [
            ("reflow: the page scrolls sideways, px wide", width)
            for width in [browser.execute_script("return document.documentElement.scrollWidth")]
            if width > browser.execute_script("return window.innerWidth")
        ]
        browser.set_window_size(*WIDE)

    audit("login", "/login")
    assert min(field_border_contrasts(browser).values()) >= 3, field_border_contrasts(browser)
    audit("login (afgemeld)", "/login?reden=afgemeld")
    browser.find_element(By.ID, "token").send_keys(token(sub="beheerder-anna"))
    browser.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    for path in ("/statussen", "/achterstand", "/mislukt", "/webhooks", "/onbevestigd",
                 "/budget", "/onderhoud"):  # fmt: skip
        audit(path, path)
    audit("/taken/{id}", f"/taken/{data.mislukt_wissen}")
    audit("/notificaties/{id}", f"/notificaties/{data.aangenomen}")
    forceren = sorted(
        link.get_attribute("href").removeprefix(console_url)
        for link in browser.find_elements(By.CSS_SELECTOR, "a[href*='/forceren?naar=']")
    )
    assert len(forceren) >= 2, "transitions with and without a reason to choose"
    for path in forceren:
        audit("/notificaties/{id}/forceren?" + path.split("?")[1], path)
    audit("/webhooks/{dv}/hervatten", f"/webhooks/{data.dv_twee}/hervatten")
    audit("/taken/{id}/heropenen", f"/taken/{data.mislukt_wissen}/heropenen")
    assert min(field_border_contrasts(browser).values()) >= 3, field_border_contrasts(browser)
    # Refused: an explanation of spaces only.
    browser.find_element(By.ID, "toelichting").send_keys("   ")
    browser.find_element(By.CSS_SELECTOR, "button.gevaar").click()
    assert "verplicht" in browser.find_element(By.CSS_SELECTOR, "[role=alert]").text
    audit("/taken/{id}/heropenen (geweigerd)")
    # Done: the notice on the page the action leads to, and the audit trail.
    browser.find_element(By.ID, "toelichting").send_keys("Storing voorbij (RFC-1234)")
    browser.find_element(By.CSS_SELECTOR, "button.gevaar").click()
    assert "heropend" in browser.find_element(By.CSS_SELECTOR, "[role=status]").text
    audit("/taken/{id}?gedaan=heropend")
    audit("/beheeracties", "/beheeracties")
    audit("fout 404", "/taken/999999999")

    print("axe-core", AXE_VERSION, json.dumps(found))  # the result per page (pytest -s)
    failing = {name: rules for name, rules in found.items() if rules}
    assert not failing, f"axe-core findings per page (rule, elements): {failing}"
