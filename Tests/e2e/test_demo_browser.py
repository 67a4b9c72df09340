"""The web demo in a real browser (issue 7, SPEC OP-6): headless Chromium driven by Selenium
opens the page Herald serves in dev mode, with the provider double as APNs and FCM (the local
push demo), and uses it as a person would:

- signs in and receives a published event over SSE, also on a channel added afterwards;
- signs in again with `?transport=ws` and receives one over WebSocket;
- registers a simulated iOS device for that session, switches to Background, sends a
  notification from the page and sees it pushed: the delivery record says `sent` and the page
  shows what the double received (headers and payload);
- switches back to Foreground and sees the next one arrive live with the push suppressed;
- switches to dev mode's second app (`demo-b`) and back, each with its own inbox and preferences.

A screenshot of the final page goes to Tests/e2e/artifacts/ (not committed). Every wait is a
bounded WebDriverWait; the test is skipped only when Chromium or its driver is not installed
(scripts/bootstrap --test installs both).
"""
import os
import signal
import sys
import uuid
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from conftest import ROOT, wait_until

sys.path.insert(0, str(ROOT / "Tests" / "ProviderDouble"))
from fixture import start_double  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
ARTIFACTS = ROOT / "Tests" / "e2e" / "artifacts"
WAIT = 20  # seconds; every wait below is bounded by this

pytestmark = pytest.mark.skipif(
    not (os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)),
    reason=f"headless Chromium is not installed ({CHROMIUM}, {CHROMEDRIVER}); scripts/bootstrap --test installs "
           "Debian's chromium and chromium-driver",
)

from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.common.exceptions import StaleElementReferenceException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402


@pytest.fixture
def double(tmp_path):
    d = start_double(tmp_path / "double")
    yield d
    d.stop()


@pytest.fixture
def demo(herald_factory, double):
    """Herald in dev mode serving the repository's web demo, pushing to the double."""
    return herald_factory(HERALD_DEV=1, HERALD_WEB_DEMO_DIR=str(ROOT / "web-demo"),
                          HERALD_DEMO_DOUBLE_URL=double.base_url, **double.herald_env())


@pytest.fixture
def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,800"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    # The page is laid out for a 1280x800 viewport (the window's size would include its frame).
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {"width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": False})
    driver.set_page_load_timeout(WAIT)
    yield driver
    driver.quit()


@contextmanager
def evidence(driver, name):
    """On failure: a screenshot and the browser console, so a red CI run shows what the page saw."""
    try:
        yield
    except BaseException:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(ARTIFACTS / f"{name}-failure.png"))
        try:
            for entry in driver.get_log("browser"):
                print("browser:", entry.get("level"), entry.get("message"))
            print("event log:", driver.find_element(By.ID, "event-log").text)
        except Exception:
            pass
        raise


# --- page helpers ------------------------------------------------------------------------------


def wait(driver, condition, message):
    # The page re-renders lists (chips, delivery records) as data arrives: an element found a
    # moment ago may be gone, which only means "look again".
    return WebDriverWait(driver, WAIT, poll_frequency=0.1,
                         ignored_exceptions=(StaleElementReferenceException,)).until(condition, message)


def text(driver, element_id):
    return driver.find_element(By.ID, element_id).text


def sign_in(driver, base, user, transport=None):
    query = f"?user={user}" + (f"&transport={transport}" if transport else "")
    driver.get(base + "/" + query)
    wait(driver, lambda d: d.find_element(By.ID, "sign-in").is_enabled(), "the sign-in button is not ready")
    driver.find_element(By.ID, "sign-in").click()
    expected = {"ws": "WebSocket"}.get(transport, "SSE")
    wait(driver, lambda d: text(d, "conn-state") == "open" and text(d, "conn-transport") == expected,
         f"the page did not connect over {expected}")


def first_text(driver, selector):
    """The visible text of the first element matching `selector`, or None."""
    found = driver.find_elements(By.CSS_SELECTOR, selector)
    return found[0].text if found else None


def event_row(driver, event, channel, event_id):
    """The log row of one message, or None."""
    for row in driver.find_elements(By.CSS_SELECTOR, f'#event-log li[data-event="{event}"]'):
        if row.get_attribute("data-channel") == channel and row.get_attribute("data-id") == event_id:
            return row
    return None


def publish_and_see(driver, herald, channel, data):
    receipt = herald.publish(channel, data, event="status")
    row = wait(driver, lambda d: event_row(d, "status", channel, receipt["id"]),
               f"the published event {receipt['id']} on {channel} did not show in the log")
    assert str(data["progress"]) in row.text


def own_session_state(driver, state):
    """The presence panel lists this page's session ("you") in `state`."""
    return bool(driver.find_elements(By.CSS_SELECTOR, f'#presence li.presence-session[data-mine="true"][data-state="{state}"]'))


def set_state(driver, state):
    driver.find_element(By.ID, f"state-{state}").click()
    wait(driver, lambda d: d.find_element(By.ID, f"state-{state}").get_attribute("aria-pressed") == "true",
         f"the {state} toggle did not switch")
    # The page refreshes presence after reporting the state (and every 5 s): wait until Herald has it.
    wait(driver, lambda d: own_session_state(d, state), f"presence never showed this session in the {state}")


def send(driver, title):
    field = driver.find_element(By.ID, "send-title-input")
    field.clear()
    field.send_keys(title)
    result = driver.find_element(By.ID, "send-result")
    before = result.get_attribute("data-notification-id")
    driver.find_element(By.ID, "send-button").click()
    return wait(driver, lambda d: (lambda v: v if v and v != before else None)(result.get_attribute("data-notification-id")),
                f"sending {title!r} gave no notification id: {result.text}")


def outcomes(driver, notification_id):
    """The outcomes the page shows for one notification, read in one step (the card is
    re-rendered every second while the record changes)."""
    return driver.execute_script(
        "return [...document.querySelectorAll(`article.delivery[data-notification-id='${arguments[0]}'] li[data-outcome]`)]"
        ".map((li) => li.dataset.outcome);", notification_id)


# --- the scenario ------------------------------------------------------------------------------


def test_demo_page_streams_switches_state_and_pushes(demo, double, browser):
    user = f"demo-{uuid.uuid4().hex[:8]}"
    with evidence(browser, "demo-browser"):
        # The page and its files come from Herald itself, typed and uncached.
        r = httpx.get(demo.url("/demo/herald-client.js"))
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/javascript"), r.headers
        assert r.headers["cache-control"] == "no-cache"

        # 1. SSE: a published event arrives, also on a channel added later (the stream reopens
        #    with the new list and the last id).
        sign_in(browser, demo.base, user)
        assert text(browser, "push-demo-state") != "off"
        publish_and_see(browser, demo, "generation:demo", {"progress": 40})
        browser.find_element(By.ID, "channel-input").send_keys("order:77")
        browser.find_element(By.ID, "channel-add").click()
        wait(browser, lambda d: d.execute_script(
            "return [...document.querySelectorAll('#channel-list .chip:not(.pending)')].some((c) => c.textContent.startsWith('order:77'));"),
            "order:77 was not subscribed")
        publish_and_see(browser, demo, "order:77", {"progress": 41})

        # 2. WebSocket, as `?transport=ws` asks.
        sign_in(browser, demo.base, user, transport="ws")
        assert browser.find_element(By.ID, "transport-select").get_attribute("value") == "ws"
        publish_and_see(browser, demo, "generation:demo", {"progress": 80})
        wait(browser, lambda d: "push demo" in d.find_element(By.ID, "push-demo-pill").text
             and text(d, "push-demo-state").startswith("on"), "the page did not find the local push demo")

        # 3. A simulated iOS device for this session.
        browser.find_element(By.ID, "register-device").click()
        device = wait(browser, lambda d: first_text(d, '#device-list li[data-platform="ios"]'), "the simulated device did not show")
        assert "this session" in device

        # 4. Background: the next notification is pushed, through the double.
        set_state(browser, "background")
        away = send(browser, "While you were away")
        wait(browser, lambda d: "sent" in outcomes(d, away), f"the delivery record of {away} never said sent")
        assert "suppressed_foreground" not in outcomes(browser, away)
        shown = wait(browser, lambda d: first_text(d, f'article.delivery[data-notification-id="{away}"] .double-request[data-provider="apns"]'),
                     "the page did not show what the double received")
        assert "/sandbox/3/device/" in shown
        pushes = [p for p in double.requests(provider="apns") if p["body"].get("notification_id") == away]
        assert len(pushes) == 1 and pushes[0]["status"] == 200, pushes
        assert pushes[0]["body"]["aps"]["alert"]["title"] == "While you were away"
        assert pushes[0]["headers"]["authorization"].startswith("bearer "), pushes[0]["headers"]
        assert pushes[0]["jwt"]["header"]["alg"] == "ES256", pushes[0]["jwt"]

        # 5. Foreground again: the next one arrives live and its push is suppressed.
        set_state(browser, "foreground")
        here = send(browser, "While you are here")
        wait(browser, lambda d: {"live_delivered", "suppressed_foreground"} <= set(outcomes(d, here)),
             f"the delivery record of {here} did not show live delivery with the push suppressed")
        assert "sent" not in outcomes(browser, here) and "queued" not in outcomes(browser, here)
        created = wait(browser, lambda d: [row for row in d.find_elements(By.CSS_SELECTOR, '#event-log li[data-event="notification.created"]')
                                           if here in row.text], "notification.created did not show in the log")
        assert created[0].get_attribute("data-channel") == f"user:{user}"
        assert not [p for p in double.requests(provider="apns") if p["body"].get("notification_id") == here]

        # The inbox was refetched on each notification.created: both are there, unread.
        wait(browser, lambda d: text(d, "unread-badge") == "2", "the unread badge did not reach 2")
        inbox = browser.find_element(By.ID, "inbox").text
        assert "While you were away" in inbox and "While you are here" in inbox

        # The artifact shows the pushed notification's record, with what the double received.
        pushed = browser.find_element(By.CSS_SELECTOR, f'article.delivery[data-notification-id="{away}"]')
        pushed.find_element(By.CSS_SELECTOR, ".double-request summary").click()
        browser.execute_script("arguments[0].scrollIntoView({block: 'start'})", pushed)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        browser.save_screenshot(str(ARTIFACTS / "demo-browser.png"))


def test_client_falls_back_from_sse_to_websocket_then_polling(demo, browser):
    """herald-client.js on its own: SSE refused (a channel the token does not grant is a 403
    before the stream starts) → WebSocket, which refuses only that channel; and with no server
    at all: SSE → WebSocket → polling."""
    with evidence(browser, "demo-client-fallback"):
        browser.get(demo.url("/demo/"))
        browser.set_script_timeout(WAIT)
        browser.execute_async_script("""
            const done = arguments[arguments.length - 1];
            import("/demo/herald-client.js").then(({ HeraldClient }) => {
              const watch = (client) => {
                const seen = { transports: [], polls: 0, client };
                client.addEventListener("status", (e) => {
                  const t = e.detail.transport;
                  if (t && seen.transports[seen.transports.length - 1] !== t) seen.transports.push(t);
                });
                client.addEventListener("poll", () => { seen.polls += 1; });
                return seen;
              };
              const token = async () => {
                const r = await fetch("/v1/dev/token", { method: "POST", headers: { "Content-Type": "application/json" },
                                                        body: JSON.stringify({ user_id: "fallback", session_id: "fb-1" }) });
                return r.json();
              };
              window.refused = watch(new HeraldClient({ getToken: token, channels: ["secret:1"] }));
              window.unreachable = watch(new HeraldClient({ getToken: token, baseUrl: "http://127.0.0.1:9", pollIntervalMs: 200 }));
              window.refused.client.start();
              window.unreachable.client.start();
              done();
            }, (error) => done(String(error)));
        """)

        def seen(name):
            return browser.execute_script(f"const s = window.{name}; return {{transports: s.transports, polls: s.polls, "
                                          f"state: s.client.status.state}};")

        wait(browser, lambda d: seen("refused")["state"] == "open" and seen("refused")["transports"][-1] == "ws",
             "the client did not fall back to an open WebSocket")
        assert seen("refused")["transports"] == ["sse", "ws"], seen("refused")
        wait(browser, lambda d: seen("unreachable")["polls"] >= 2, "the client did not end up polling")
        assert seen("unreachable")["transports"] == ["sse", "ws", "poll"], seen("unreachable")


def test_a_stream_eventsource_reopens_by_itself_keeps_the_state_the_app_reported(demo, browser):
    """breaker10: EventSource reconnects by itself, to the URL it was made with. herald-client.js
    put the app state there (`?state=foreground` at sign-in) and reported later changes with
    `PUT …/state`; after a server that died without `shutdown` came back, the reopened stream said
    `foreground` again while the app was in the background, so notifications were written to a
    hidden page and their pushes suppressed: neither seen nor pushed. The reopened stream must
    carry the state the app last reported."""
    with evidence(browser, "demo-client-reconnect-state"):
        browser.get(demo.url("/demo/"))
        browser.set_script_timeout(WAIT)
        browser.execute_async_script("""
            const done = arguments[arguments.length - 1];
            import("/demo/herald-client.js").then(({ HeraldClient }) => {
              const token = async () => {
                const r = await fetch("/v1/dev/token", { method: "POST", headers: { "Content-Type": "application/json" },
                                                        body: JSON.stringify({ user_id: "away", session_id: "away-1" }) });
                return r.json();
              };
              const client = new HeraldClient({ getToken: token, transport: "sse", state: "foreground" });
              window.away = { client, readies: 0 };
              client.addEventListener("ready", () => { window.away.readies += 1; });
              client.start();
              done();
            }, (error) => done(String(error)));
        """)

        def readies():
            return browser.execute_script("return window.away.readies;")

        def states():
            r = httpx.get(demo.url("/v1/users/away/sessions/live"), headers=demo.server_headers(), timeout=5)
            assert r.status_code == 200, r.text
            return [c["state"] for s in r.json()["sessions"] for c in s["connections"]]

        wait(browser, lambda d: readies() == 1, "the SSE stream did not open")
        error = browser.execute_async_script("""
            const done = arguments[arguments.length - 1];
            window.away.client.setState("background").then(() => done(null), (e) => done(String(e)));
        """)
        assert error is None, error
        assert states() == ["background"]
        # The server dies without a `shutdown` event and comes back on its port: the stream ends
        # with a network error, which EventSource answers by reconnecting itself.
        demo.stop(sig=signal.SIGKILL)
        demo.start()
        wait(browser, lambda d: readies() == 2, "the SSE stream did not come back after the restart")
        assert browser.execute_script("return window.away.client.status.transport;") == "sse"
        wait_until(lambda: states() == ["background"], timeout=10, what="the reopened stream in the background the app reported")


# herald-client.js with the browser's transports wrapped so a test can hold them: an EventSource
# made while `window.hold.sources` is set keeps its events (in order) until `release()`, as if its
# answer were slow to arrive; a WebSocket's sends wait while `window.hold.sends` is set; a `PUT` of
# the session state waits while `window.hold.puts` is set (`window.hold.puts_sent` lists the
# states of those sent, in order). Then `window.h` is a client of `user` (session `<user>-1`) with
# `options`, whose shown messages are `window.h.messages`; while `window.shortLivedTokens` is set,
# its tokens say they expire in 60 s, so the client refreshes them 5 s after fetching one.
CLIENT_HARNESS = """
    const [done, user, options] = [arguments[arguments.length - 1], arguments[0], arguments[1]];
    const hold = window.hold = { sources: false, sends: false, puts: false, held: [], puts_sent: [] };
    const RealEventSource = window.EventSource;
    window.EventSource = class extends RealEventSource {
      constructor(url, init) {
        super(url, init);
        this.queue = hold.sources ? [] : null;
        if (this.queue) hold.held.push(this);
      }
      addEventListener(type, listener, options) {
        super.addEventListener(type, (e) => (this.queue ? this.queue.push(() => listener(e)) : listener(e)), options);
      }
      release() {
        const queue = this.queue || [];
        this.queue = null;
        for (const deliver of queue) deliver();
      }
    };
    const RealWebSocket = window.WebSocket;
    window.WebSocket = class extends RealWebSocket {
      send(data) {
        if (!hold.sends) return super.send(data);
        hold.held.push(() => super.send(data));
      }
    };
    const realFetch = window.fetch.bind(window);
    window.fetch = (url, init) => {
      if (init?.method !== "PUT") return realFetch(url, init);
      const put = () => {
        hold.puts_sent.push(JSON.parse(init.body).state);
        return realFetch(url, init);
      };
      if (!hold.puts) return put();
      return new Promise((resolve, reject) => hold.held.push(() => put().then(resolve, reject)));
    };
    hold.releaseAll = () => {
      const held = hold.held.splice(0);
      for (const item of held) (typeof item === "function" ? item() : item.release());
    };
    import("/demo/herald-client.js").then(({ HeraldClient }) => {
      const token = async () => {
        const r = await fetch("/v1/dev/token", { method: "POST", headers: { "Content-Type": "application/json" },
          body: JSON.stringify({ user_id: user, session_id: `${user}-1`, channels: ["generation:*", "order:*"] }) });
        const body = await r.json();
        // The refresh timer fires a minute before `exp`, at least 5 s on.
        return window.shortLivedTokens ? { ...body, expires_at: Math.floor(Date.now() / 1000) + 60 } : body;
      };
      const client = new HeraldClient({ getToken: token, ...options.client });
      window.h = { client, messages: [], readies: 0 };
      client.addEventListener("message", (e) => window.h.messages.push({ id: e.detail.id, channel: e.detail.channel }));
      client.addEventListener("ready", () => { window.h.readies += 1; });
      client.start().then(() => done(null), (e) => done(String(e)));
    }, (error) => done(String(error)));
"""


def start_client(browser, demo, user, **options):
    browser.get(demo.url("/demo/"))
    browser.set_script_timeout(WAIT)
    error = browser.execute_async_script(CLIENT_HARNESS, user, options)
    assert error is None, error


def live_connections(demo, user):
    """The connections Herald holds for `user`, as (channels, state) pairs."""
    r = httpx.get(demo.url(f"/v1/users/{user}/sessions/live"), headers=demo.server_headers(), timeout=5)
    assert r.status_code == 200, r.text
    return [(sorted(c["channels"]), c["state"]) for s in r.json()["sessions"] for c in s["connections"]]


def shown(browser):
    return browser.execute_script("return window.h.messages;")


def test_an_sse_reopen_opens_the_new_stream_before_closing_the_old_one(demo, browser):
    """hardening11: a channel change or a token refresh over SSE closed the old EventSource before
    the new one was open: a notification in that gap found the session without a stream and was
    pushed, then replayed live. Now the new stream (held here before its `ready`, as a slow
    answer would be) opens beside the old one, which goes only at the new one's `ready`; what both
    carried is shown once."""
    user = f"mbb-{uuid.uuid4().hex[:8]}"
    with evidence(browser, "demo-client-make-before-break"):
        start_client(browser, demo, user, client={"transport": "sse", "channels": ["generation:demo"]})
        wait(browser, lambda d: d.execute_script("return window.h.readies;") == 1, "the SSE stream did not open")
        first = demo.publish("generation:demo", {"n": 1})
        wait(browser, lambda d: [m["id"] for m in shown(d)] == [first["id"]], "the first message was not shown")

        # A channel added: the new stream is held before its `ready`; the old one must stay.
        browser.execute_script("window.hold.sources = true; window.h.client.addChannel('order:77'); window.hold.sources = false;")
        wait_until(lambda: len(live_connections(demo, user)) == 2, timeout=WAIT,
                   what="the new stream opened while the old one was still open")
        both = demo.publish("generation:demo", {"n": 2})        # on both streams
        added = demo.publish("order:77", {"n": 3})              # on the new one only
        wait(browser, lambda d: both["id"] in [m["id"] for m in shown(d)], "the old stream stopped delivering before the new one was ready")
        assert sorted(live_connections(demo, user)) == [(["generation:demo", "order:77", f"user:{user}"], "foreground"),
                                                        (["generation:demo", f"user:{user}"], "foreground")]
        browser.execute_script("window.hold.releaseAll();")
        wait_until(lambda: live_connections(demo, user) == [(["generation:demo", "order:77", f"user:{user}"], "foreground")],
                   timeout=WAIT, what="the old stream closed once the new one was ready")
        wait(browser, lambda d: [m["id"] for m in shown(d)] == [first["id"], both["id"], added["id"]],
             "the messages were not each shown once, in order")
        assert browser.execute_script("return window.h.client.status.lastEventId;") == added["id"]
        assert browser.execute_script("return window.h.readies;") == 2

        # A token refresh reopens the same way: started again with a token said to expire in 60 s,
        # the client refreshes it 5 s on (and takes a long-lived one then, so once).
        error = browser.execute_async_script("""
            const done = arguments[arguments.length - 1];
            window.h.client.stop();
            window.shortLivedTokens = true;
            window.h.client.start().then(() => { window.shortLivedTokens = false; done(null); }, (e) => done(String(e)));
        """)
        assert error is None, error
        wait(browser, lambda d: d.execute_script("return window.h.readies;") == 3, "the SSE stream did not open again")
        browser.execute_script("window.hold.sources = true;")
        wait(browser, lambda d: d.execute_script("return window.hold.held.length;") == 1, "the token refresh did not reopen the stream")
        browser.execute_script("window.hold.sources = false;")
        wait_until(lambda: len(live_connections(demo, user)) == 2, timeout=WAIT, what="the refreshed stream opened beside the old one")
        during = demo.publish("order:77", {"n": 4})
        wait(browser, lambda d: during["id"] in [m["id"] for m in shown(d)], "the old stream stopped delivering during the refresh")
        browser.execute_script("window.hold.releaseAll();")
        wait_until(lambda: len(live_connections(demo, user)) == 1, timeout=WAIT, what="the old stream closed after the refresh")
        after = demo.publish("order:77", {"n": 5})
        wait(browser, lambda d: [m["id"] for m in shown(d)] == [first["id"], both["id"], added["id"], during["id"], after["id"]],
             "the messages around the refresh were not each shown once")
        assert browser.execute_script("return window.h.readies;") == 4
        assert live_connections(demo, user) == [(["generation:demo", "order:77", f"user:{user}"], "foreground")]


def test_a_state_reported_before_the_websocket_is_ready_reaches_it(demo, browser):
    """hardening11: over WebSocket, `setState` before the socket's `ready` went as a `PUT`, which
    finds no connection yet (the socket's `auth` is still on its way, held here) and is lost; the
    socket then opened in the state of its URL. The state now goes on the socket at `ready`."""
    user = f"wsstate-{uuid.uuid4().hex[:8]}"
    with evidence(browser, "demo-client-ws-state"):
        start_client(browser, demo, user, client={"transport": "ws", "state": "foreground"})
        wait(browser, lambda d: d.execute_script("return window.h.readies;") == 1, "the WebSocket did not open")
        # Reopen with the `auth` message held, and report a state meanwhile.
        error = browser.execute_async_script("""
            const done = arguments[arguments.length - 1];
            window.hold.sends = true;
            window.h.client.reconnect();
            window.h.client.setState("background").then(() => done(null), (e) => done(String(e)));
        """)
        assert error is None, error
        browser.execute_script("window.hold.sends = false; window.hold.releaseAll();")
        wait(browser, lambda d: d.execute_script("return window.h.readies;") == 2, "the WebSocket did not reopen")
        wait_until(lambda: live_connections(demo, user) == [([f"user:{user}"], "background")], timeout=WAIT,
                   what="the reopened WebSocket in the background the app reported before its ready")


def test_state_reports_over_http_land_in_the_order_they_were_made(demo, browser):
    """hardening11: two `PUT …/state` in flight could land in either order, the older last. The
    client sends one at a time, the next with the state of its moment: here the first is held
    (a slow request) while the app goes back to the foreground."""
    user = f"puts-{uuid.uuid4().hex[:8]}"
    with evidence(browser, "demo-client-state-order"):
        start_client(browser, demo, user, client={"transport": "sse", "state": "foreground"})
        wait(browser, lambda d: d.execute_script("return window.h.readies;") == 1, "the SSE stream did not open")
        browser.execute_script("""
            window.hold.puts = true;
            window.reports = [window.h.client.setState("background")];
            window.hold.puts = false;
            window.reports.push(window.h.client.setState("foreground"));
        """)
        error = browser.execute_async_script("""
            const done = arguments[arguments.length - 1];
            window.hold.releaseAll();
            Promise.all(window.reports).then(() => done(null), (e) => done(String(e)));
        """)
        assert error is None, error
        assert browser.execute_script("return window.hold.puts_sent;") == ["background", "foreground"]
        assert live_connections(demo, user) == [([f"user:{user}"], "foreground")]


def test_demo_page_receives_a_web_push_through_its_service_worker(demo, double, browser):
    """Issue 15: "This browser (Web Push)" registers the page's service worker and, in the local
    push demo, a simulated subscription (WebCrypto P-256 keys and auth secret, endpoint at the
    double's push service). In the background a notification is pushed there, encrypted and
    VAPID-signed by Herald; the page decrypts what the double received and its service worker
    shows it as a notification."""
    from selenium.webdriver.support.ui import Select

    user = f"wp-{uuid.uuid4().hex[:8]}"
    browser.execute_cdp_cmd("Browser.grantPermissions", {"origin": demo.base, "permissions": ["notifications"]})
    with evidence(browser, "demo-webpush"):
        sign_in(browser, demo.base, user)
        wait(browser, lambda d: text(d, "push-demo-state").startswith("on"), "the page did not find the local push demo")
        Select(browser.find_element(By.ID, "device-platform")).select_by_value("web")
        browser.find_element(By.ID, "register-device").click()
        device = wait(browser, lambda d: first_text(d, '#device-list li[data-platform="web"]'), "the browser did not register as a device")
        assert "webpush" in device and "this session" in device, device
        assert "Simulated subscription" in text(browser, "webpush-state"), text(browser, "webpush-state")

        set_state(browser, "background")
        away = send(browser, "Pushed to this browser")
        wait(browser, lambda d: "sent" in outcomes(d, away), f"the delivery record of {away} never said sent")
        shown = wait(browser, lambda d: first_text(d, f'#webpush-shown li[data-notification-id="{away}"]'),
                     "the service worker did not show the decrypted push")
        assert "Pushed to this browser" in shown, shown

        # The double saw a VAPID-signed aes128gcm body it could not read (the key is the page's).
        [pushed] = [e for e in double.requests(provider="webpush") if e["status"] == 201]
        assert not pushed["known_subscription"] and pushed["encrypted_body"], pushed
        assert pushed["headers"]["content-encoding"] == "aes128gcm" and pushed["vapid"]["claims"]["aud"] == double.base_url, pushed
        # The card shows what the page decrypted from it.
        card = wait(browser, lambda d: first_text(d, f'article.delivery[data-notification-id="{away}"] .double-request[data-provider="webpush"]'),
                    "the delivery card did not show the Web Push request")
        assert "/wp/demo-" in card, card

        browser.set_script_timeout(WAIT)
        notifications = browser.execute_async_script("""
            const done = arguments[arguments.length - 1];
            navigator.serviceWorker.getRegistration("/demo/")
              .then((r) => r.getNotifications())
              .then((list) => done(list.map((n) => ({ title: n.title, body: n.body, tag: n.tag, data: n.data }))), (e) => done(String(e)));
        """)
        assert isinstance(notifications, list), notifications
        assert [n["title"] for n in notifications] == ["Pushed to this browser"], notifications
        assert notifications[0]["data"]["notification_id"] == away, notifications
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        browser.save_screenshot(str(ARTIFACTS / "demo-webpush.png"))


def inbox_titles(driver):
    return driver.execute_script("return [...document.querySelectorAll('#inbox li[data-notification-id] strong')].map((s) => s.textContent);")


def test_demo_page_switches_between_two_apps(demo, browser):
    """Issue 14: the app switcher. The same demo user in `default` and in dev mode's `demo-b`
    (German catalog) is two users: switching reconnects the stream, and the inbox, preferences and
    presence shown are the chosen app's; notifications sent from the page go into it."""
    from selenium.webdriver.support.ui import Select

    user = f"apps-{uuid.uuid4().hex[:8]}"
    with evidence(browser, "demo-apps"):
        sign_in(browser, demo.base, user)
        assert text(browser, "app-state") == "default" and text(browser, "fact-app") == "default"
        wait(browser, lambda d: d.find_element(By.ID, "prefs-kinds").get_attribute("data-app") == "default",
             "the default app's preferences did not show")
        assert "no catalog" in text(browser, "prefs-kinds")
        send(browser, "Hello from default")
        wait(browser, lambda d: inbox_titles(d) == ["Hello from default"], "the default inbox did not show the notification")
        default_session = text(browser, "fact-session")

        # Switch: a new stream in demo-b, its own (empty) inbox, its catalog's kinds, its session.
        Select(browser.find_element(By.ID, "app-select")).select_by_value("demo-b")
        wait(browser, lambda d: text(d, "app-state") == "demo-b" and text(d, "conn-state") == "open"
             and text(d, "fact-session") not in ("—", default_session), "the page did not reconnect in demo-b")
        wait(browser, lambda d: first_text(d, "#inbox li.empty") == "No notifications yet.", "demo-b's inbox is not empty")
        kinds = wait(browser, lambda d: d.execute_script(
            "return [...document.querySelectorAll('#prefs-kinds li[data-kind]')].map((li) => li.dataset.kind);"),
            "demo-b's catalog kinds did not show in the preferences")
        assert kinds == ["demo.message", "demo.shipped"], kinds
        wait(browser, lambda d: own_session_state(d, "foreground"), "presence did not show this session in demo-b")
        # The send form takes demo-b's defaults: no texts of its own, so the catalog's German ones.
        assert browser.find_element(By.ID, "send-title-input").get_attribute("value") == ""
        german = send(browser, "")
        wait(browser, lambda d: inbox_titles(d) == ["Deine Generierung ist fertig"], "demo-b's inbox did not show its notification")
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        browser.save_screenshot(str(ARTIFACTS / "demo-apps.png"))
        created = [row for row in browser.find_elements(By.CSS_SELECTOR, '#event-log li[data-event="notification.created"]')
                   if german in row.text]
        assert created and created[0].get_attribute("data-channel") == f"user:{user}"

        # The server agrees: one notification each, in its own app.
        for app, title in (("default", "Hello from default"), ("demo-b", "Deine Generierung ist fertig")):
            token = httpx.post(demo.url("/v1/dev/token"), json={"user_id": user, "app": app}).json()["access_token"]
            listed = httpx.get(demo.url("/v1/me/notifications"), headers={"Authorization": f"Bearer {token}"}).json()
            assert [n["title"] for n in listed["notifications"]] == [title], (app, listed)

        # And back: the default app's inbox again, without demo-b's notification.
        Select(browser.find_element(By.ID, "app-select")).select_by_value("default")
        wait(browser, lambda d: text(d, "app-state") == "default" and text(d, "conn-state") == "open"
             and inbox_titles(d) == ["Hello from default"], "switching back did not show the default inbox")
        assert text(browser, "fact-session") == default_session

        # `?app=demo-b` starts there.
        browser.get(demo.url(f"/?user={user}&app=demo-b&autostart=1"))
        wait(browser, lambda d: text(d, "app-state") == "demo-b" and text(d, "conn-state") == "open"
             and inbox_titles(d) == ["Deine Generierung ist fertig"], "?app=demo-b did not sign in to demo-b")
        assert not browser.find_element(By.ID, "app-push-hint").get_attribute("hidden")
