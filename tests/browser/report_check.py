"""Opens an acprof HTML report in headless chromium (Debian's, driven through
chromedriver by Debian's python3-selenium) with the network made unreachable,
and checks what a person would: the charts are drawn, hovering the peak shows
its op and its bytes, dragging across a chart zooms every chart, and Reset
shows the whole iteration again. Any request other than the report file itself,
and any script error, is a failure.

    /usr/bin/python3 tests/browser/report_check.py REPORT.html [--screenshot OUT.png]

Exits 0 when every check passes, 1 with one line per failure otherwise.
check_report() is also imported by real_reports_test.py.
"""

import argparse
import json
import os
import pathlib
import sys
import time

try:
    from selenium import webdriver
    from selenium.common.exceptions import TimeoutException, WebDriverException
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.actions.action_builder import ActionBuilder
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError:
    sys.exit(f"report_check: {sys.executable} has no selenium; apt-get install -y python3-selenium "
             "and run this with /usr/bin/python3")

CHROMIUM = os.environ.get("ACPROF_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("ACPROF_CHROMEDRIVER", "/usr/bin/chromedriver")
VIEWPORT = (1280, 900)
SCREENSHOT_WIDTH = 1400  # docs/report.png


def format_bytes(count):
    """The profile format's formatBytes, written again here so the page's own formatter is checked, not trusted."""
    units = ["B", "KiB", "MiB", "GiB", "TiB"]
    value, unit = abs(count), 0
    while value >= 1024 and unit < 4:
        value /= 1024
        unit += 1
    sign = "-" if count < 0 else ""
    return f"{sign}{int(value)} B" if unit == 0 else f"{sign}{value:.2f} {units[unit]}"


def start_chromium():
    for path, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not os.path.exists(path):
            raise RuntimeError(f"{path} is missing; install it with apt-get install -y {package}")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in [
        "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-default-apps", "--disable-quic", "--force-device-scale-factor=1",
        f"--window-size={VIEWPORT[0]},{VIEWPORT[1]}",
        # No network: every http(s) and websocket request, loopback included,
        # goes to a proxy on a port nothing listens on, and no name resolves.
        "--proxy-server=http://127.0.0.1:9", "--proxy-bypass-list=<-loopback>",
        "--host-resolver-rules=MAP * ~NOTFOUND",
    ]:
        options.add_argument(flag)
    # Every request the page makes (performance log) and every script error (browser log).
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    options.add_experimental_option("perfLoggingPrefs", {"enableNetwork": True, "enablePage": False})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    set_viewport(driver, *VIEWPORT)
    return driver


def set_viewport(driver, width, height):
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})


def requested_urls(driver):
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
        elif message["method"] == "Network.webSocketCreated":
            urls.append(message["params"]["url"])
    return urls


def page_errors(driver):
    return [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


# What each chart's canvases hold: size, how much is drawn on (not white),
# how many colours, and how much is in the chart's own series colours (an
# area or a line, not just the phase shading and the grid).
MEASURE_CHARTS = """
return window.acprofCharts.map((g) => {
  const colours = g.getColors().map((c) => {
    const probe = document.createElement("canvas").getContext("2d");
    probe.fillStyle = c;
    probe.fillRect(0, 0, 1, 1);
    return Array.from(probe.getImageData(0, 0, 1, 1).data.slice(0, 3));
  });
  let best = null;
  for (const canvas of g.graphDiv.querySelectorAll("canvas")) {
    const { width, height } = canvas;
    if (!width || !height) continue;
    const pixels = canvas.getContext("2d").getImageData(0, 0, width, height).data;
    let inked = 0, series = 0;
    const seen = new Set();
    for (let i = 0; i < pixels.length; i += 4) {
      const [r, gr, b, a] = [pixels[i], pixels[i + 1], pixels[i + 2], pixels[i + 3]];
      if (a > 0 && (r < 240 || gr < 240 || b < 240)) inked++;
      if (a > 200 && colours.some((c) => Math.abs(c[0] - r) + Math.abs(c[1] - gr) + Math.abs(c[2] - b) < 24)) series++;
      if (i % 64 === 0) seen.add((r << 16) | (gr << 8) | b);
    }
    const measured = { width, height, inked: inked / (width * height), series: series / (width * height),
                       colours: seen.size };
    if (!best || measured.inked > best.inked) best = measured;
  }
  return best || { width: 0, height: 0, inked: 0, series: 0, colours: 0 };
});
"""

# The plot area of chart `i` in viewport coordinates, and where x value `x` is in it.
PLOT_AREA = """
const g = window.acprofCharts[arguments[0]];
const box = g.graphDiv.getBoundingClientRect(), area = g.getArea();
const x = arguments[1] === null ? null : box.left + g.toDomXCoord(arguments[1]);
return { left: box.left + area.x, top: box.top + area.y, width: area.w, height: area.h, x };
"""

X_RANGES = "return window.acprofCharts.map((g) => g.xAxisRange());"


def plot_area(driver, chart, x=None):
    driver.execute_script("window.acprofCharts[arguments[0]].graphDiv.scrollIntoView({block: 'nearest'});", chart)
    return driver.execute_script(PLOT_AREA, chart, x)


def move_mouse(driver, x, y, duration_ms=100):
    actions = ActionBuilder(driver, duration=duration_ms)
    actions.pointer_action.move_to_location(round(x), round(y))
    actions.perform()


def hover_peak(driver, peak):
    area = plot_area(driver, 0, (peak["x"] + peak["x_end"]) / 2)
    y = area["top"] + area["height"] / 2
    move_mouse(driver, area["x"] - 20, y)
    move_mouse(driver, area["x"], y)


def check_report(report_path, screenshot=None):
    """Returns the failed checks, each a line; empty when the report works."""
    report = pathlib.Path(report_path).resolve()
    failures = []

    def check(condition, message):
        if not condition:
            failures.append(f"{report.name}: {message}")
        return condition

    driver = start_chromium()
    try:
        driver.get(report.as_uri())
        try:
            WebDriverWait(driver, 15).until(
                lambda d: d.execute_script("return document.body.dataset.rendered === 'true';"))
        except TimeoutException:
            errors = page_errors(driver)
            check(False, "the page did not finish drawing in 15 s (body[data-rendered] never set); its errors: " +
                  (" | ".join(errors) if errors else "none reported"))
            return failures

        data = driver.execute_script("return JSON.parse(document.getElementById('acprof-data').textContent);")
        expected_charts = 3 if data["kind"] == "comparison" else 1

        # 1. Drawn: each chart's canvas holds a real picture, its series among it.
        drawings = driver.execute_script(MEASURE_CHARTS)
        check(len(drawings) == expected_charts, f"expected {expected_charts} charts, found {len(drawings)}")
        check(len(driver.find_elements(By.CSS_SELECTOR, ".chart canvas")) >= expected_charts,
              "no chart canvas on the page")
        for i, d in enumerate(drawings):
            check(d["width"] > 400 and d["height"] > 200, f"chart {i} canvas is {d['width']}x{d['height']}")
            check(d["inked"] > 0.05, f"chart {i} is nearly blank ({d['inked'] * 100:.1f}% drawn on)")
            check(d["colours"] > 4, f"chart {i} has only {d['colours']} colours")
            check(d["series"] > 0.002, f"chart {i} shows none of its series ({d['series'] * 100:.2f}% in their colours)")

        # 2. Hovering the peak of the first chart: the tooltip names the op and the bytes.
        profile = data["profiles"][0]
        peak = profile["peak"]
        if check(peak is not None, "the first profile has no peak to hover"):
            peak_op = profile["steps"]["op"][peak["step"]]
            hover_peak(driver, peak)
            tooltip = driver.find_element(By.CSS_SELECTOR, ".acprof-tooltip")
            try:
                WebDriverWait(driver, 5).until(lambda d: tooltip.is_displayed())
                tip = tooltip.text
            except TimeoutException:
                check(False, "no tooltip appeared when hovering the peak")
                tip = ""
            check(peak_op in tip, f"tooltip at the peak does not name its op {peak_op!r}: {tip!r}")
            check(format_bytes(peak["bytes"]) in tip,
                  f"tooltip at the peak does not show the peak total {format_bytes(peak['bytes'])}: {tip!r}")
            check(any(word in tip.split() for word in ("weight", "activation", "gradient")),
                  f"tooltip shows no category: {tip!r}")

        # 3. Dragging from 30% to 60% of the first chart zooms every chart there; Reset zoom restores it.
        full = driver.execute_script(X_RANGES)
        area = plot_area(driver, 0)
        y = round(area["top"] + area["height"] / 2)
        start_x, end_x = area["left"] + 0.3 * area["width"], area["left"] + 0.6 * area["width"]
        drag = ActionBuilder(driver, duration=50)
        drag.pointer_action.move_to_location(round(start_x), y).pointer_down()
        for fraction in (0.35, 0.45, 0.55, 0.6):
            drag.pointer_action.move_to_location(round(area["left"] + fraction * area["width"]), y)
        drag.pointer_action.pointer_up()
        drag.perform()
        zoomed = driver.execute_script(X_RANGES)
        full_min, full_max = full[0]
        span = full_max - full_min
        z_min, z_max = zoomed[0]
        check(abs(z_min - (full_min + 0.3 * span)) < 0.02 * span and abs(z_max - (full_min + 0.6 * span)) < 0.02 * span,
              f"drag from 30% to 60% zoomed to [{z_min}, {z_max}] of [{full_min}, {full_max}]")
        for i, (r_min, r_max) in enumerate(zoomed):
            check(r_min == z_min and r_max == z_max, f"chart {i} did not follow the zoom: [{r_min}, {r_max}] vs [{z_min}, {z_max}]")
        driver.find_element(By.XPATH, "//button[normalize-space()='Reset zoom']").click()
        reset = driver.execute_script(X_RANGES)
        for i, r in enumerate(reset):
            check(r == full[i], f"Reset zoom gave chart {i} {r}, not the whole iteration {full[i]}")

        foreign = [url for url in requested_urls(driver) if url != report.as_uri() and not url.startswith("data:")]
        check(not foreign, "the report requested " + ", ".join(foreign))
        errors = page_errors(driver)
        check(not errors, "the page reported errors: " + " | ".join(errors))

        if screenshot:
            # The header and every chart, with the tooltip at the peak; the
            # tables stay out. The viewport grows first: a resize redraws the
            # charts and would drop the cursor.
            bottom = driver.execute_script(
                "window.scrollTo(0, 0); return document.querySelector('.charts').getBoundingClientRect().bottom + 8;")
            set_viewport(driver, SCREENSHOT_WIDTH, int(bottom + 0.999))
            time.sleep(0.2)
            if peak is not None:
                hover_peak(driver, peak)
            driver.save_screenshot(screenshot)
    finally:
        driver.quit()
    return failures


def main():
    parser = argparse.ArgumentParser(description="Checks an acprof HTML report in headless chromium.")
    parser.add_argument("report", help="the report's HTML file")
    parser.add_argument("--screenshot", metavar="OUT.png", help="also save a picture of the page's charts")
    args = parser.parse_args()
    try:
        failures = check_report(args.report, screenshot=args.screenshot)
    except (RuntimeError, OSError, WebDriverException) as error:
        print(f"report_check: {str(error).strip().splitlines()[0]}", file=sys.stderr)
        return 1
    for failure in failures:
        print(f"report_check: {failure}", file=sys.stderr)
    if failures:
        return 1
    print(f"report_check: {args.report}: drawn, tooltip, zoom and reset all work")
    return 0


if __name__ == "__main__":
    sys.exit(main())
