// The demo page: signs in as a demo user, streams with HeraldClient, and shows what Herald does
// with each notification. Everything here goes through Herald's public API, except the
// `/v1/dev/…` helpers, which exist only in dev mode (HERALD_DEV=1).
import { HeraldClient } from "/demo/herald-client.js";

const GRANTS = ["generation:*", "order:*", "room:*", "demo:*"];
const DEFAULT_CHANNEL = "generation:demo";
const MAX_LOG_ROWS = 200;
const DELIVERY_POLL_MS = 1000;
const DELIVERY_POLL_LIMIT_MS = 60_000;
const PRESENCE_POLL_MS = 5000;
/** What the send form holds for each app: demo-b's catalog has texts (German), so its title and
 *  body stay empty and the notification takes them from the catalog. */
const APP_FORMS = {
  default: { kind: "demo.message", title: "Your generation is ready", body: "Tap to see the result." },
  "demo-b": { kind: "demo.message", title: "", body: "" },
};
/** Outcomes after which a device target will not change any more (docs: NOTIFY-API). */
const SETTLED = new Set(["live_delivered", "suppressed_foreground", "suppressed_acked", "skipped_preferences", "skipped_session",
                         "skipped_audience", "skipped_policy", "expired", "sent", "failed", "dead", "opened"]);

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(window.location.search);

const page = {
  client: null,
  app: "default",          // the app tokens are minted for (`POST /v1/dev/token`'s `app`)
  apps: null,              // the apps dev tokens can be minted for, once a token answer said
  userId: null,
  sessionId: null,
  sessionIds: {},          // app → this sign-in's session in that app (each app is a sign-in of its own)
  prefs: null,             // the current app's global push preferences
  pushDemo: null,          // true / false once known
  doubleSince: 0,          // ask the double for requests after this `seq`
  doubleRequests: new Map(), // seq → what the double received
  deliveries: new Map(),   // notification id → {card, timer, started, record}
  webPush: null,           // this browser's subscription: {id, endpoint, simulated, privateKey, publicRaw, auth}
  webPushPayloads: new Map(), // double log seq → payload this page decrypted (simulated subscription)
  worker: null,            // the service worker registration
  presenceTimer: null,
};

// MARK: - Small DOM helpers

/** Builds an element: `el("li", {class: "x", dataset: {id: 1}}, "text", child)`. */
function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function time(at = Date.now()) {
  return new Date(at).toLocaleTimeString([], { hour12: false });
}

function compact(value) {
  return value === undefined ? "" : JSON.stringify(value);
}

function setEnabled(signedIn) {
  for (const id of ["channel-input", "channel-add", "state-foreground", "state-background", "device-platform", "register-device",
                    "send-kind", "send-policy", "send-title-input", "send-body", "send-live", "send-button", "read-all",
                    "presence-refresh", "presence-channel", "reconnect", "sign-out", "prefs-refresh", "prefs-enabled"]) {
    $(id).disabled = !signedIn;
  }
  $("sign-in").disabled = signedIn;
  $("user-id").disabled = signedIn;
  $("transport-select").disabled = signedIn;
}

/** Fetch through the client (with the token); throws with Herald's error message on failure. */
async function api(path, options = {}) {
  const response = await page.client.fetch(path, options);
  if (response.status === 204) return { response, body: null };
  const body = await response.json().catch(() => null);
  if (!response.ok) {
    const error = new Error(body?.message ?? `${response.status} ${response.statusText}`);
    error.status = response.status;
    error.code = body?.error;
    throw error;
  }
  return { response, body };
}

// MARK: - Event log

function logRow({ id = null, channel = "", event = "", data = "", kind = "message" }) {
  const log = $("event-log");
  const row = el("li", { class: `log-${kind}`, dataset: { event, channel, id: id ?? "" } },
    el("div", { class: "log-head" },
      el("time", {}, time()),
      el("code", { class: "id", title: "event id (the resume cursor)" }, id ?? "—"),
      el("strong", { class: "ev" }, event),
      channel ? el("span", { class: "ch" }, channel) : null),
    data ? el("code", { class: "data" }, data) : null);
  log.prepend(row);
  while (log.children.length > MAX_LOG_ROWS) log.lastElementChild.remove();
}

function logSystem(event, text) {
  logRow({ event, data: text, kind: "system" });
}

// MARK: - Sign in and the client

function newSessionId() {
  const bytes = crypto.getRandomValues(new Uint8Array(4));
  return "web-" + [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** A dev token of `app` for this user and that app's session. */
async function devToken(app, sessionId) {
  const response = await fetch("/v1/dev/token", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ user_id: page.userId, session_id: sessionId, channels: GRANTS, ttl_seconds: 3600, app }),
  });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(body.message ?? `dev token refused (${response.status}); is HERALD_DEV=1 set?`);
  if (Array.isArray(body.apps)) showApps(body.apps);
  return body;
}

async function signIn(event) {
  event.preventDefault();
  if (!$("signin-form").reportValidity()) return;
  page.userId = $("user-id").value.trim();
  page.sessionIds = {};
  await connect([DEFAULT_CHANNEL]);
}

/** Starts a client of the current app as the signed-in user, on `channels`. */
async function connect(channels) {
  const app = page.app;
  page.sessionIds[app] ??= newSessionId();
  page.sessionId = page.sessionIds[app];
  const sessionId = page.sessionId;
  const transport = $("transport-select").value;
  const client = new HeraldClient({
    getToken: () => devToken(app, sessionId),
    channels,
    transport,
    state: currentVisibilityState(),
  });
  page.client = client;
  client.addEventListener("status", (e) => showStatus(e.detail));
  client.addEventListener("ready", (e) => onReady(e.detail));
  client.addEventListener("message", (e) => onMessage(e.detail));
  client.addEventListener("reset", (e) => onReset(e.detail));
  client.addEventListener("shutdown", () => logSystem("shutdown", "server is stopping; reconnecting with the last id"));
  client.addEventListener("poll", () => {
    logSystem("poll", "polling the inbox");
    refreshInbox();
  });
  client.addEventListener("problem", (e) => logSystem("problem", e.detail.text));
  setEnabled(true);
  showAppState(client.appState);
  renderChannels();
  try {
    await client.start();
  } catch (error) {
    if (page.client !== client) return;   // switched away meanwhile
    logSystem("problem", `sign-in to app ${app} failed: ${error.message}`);
    signOut();
    return;
  }
  if (page.client !== client) return;
  $("fact-user").textContent = page.userId;
  $("fact-session").textContent = page.sessionId;
  probePushDemo();
  refreshDevices();
  refreshInbox();
  refreshPreferences();
  page.presenceTimer = setInterval(refreshPresence, PRESENCE_POLL_MS);
}

// MARK: - Apps

function showApp() {
  $("app-state").textContent = page.app;
  $("app-pill").dataset.app = page.app;
  $("fact-app").textContent = page.app;
  $("app-push-hint").hidden = page.app === "default";
  if ($("app-select").value !== page.app) $("app-select").value = page.app;
}

/** Marks the apps a dev token can be minted for; the others stay listed, disabled. */
function showApps(apps) {
  page.apps = apps;
  const select = $("app-select");
  for (const app of apps) {
    if (![...select.options].some((o) => o.value === app)) select.append(el("option", { value: app }, app));
  }
  for (const option of select.options) {
    option.disabled = !apps.includes(option.value);
    option.title = option.disabled ? "not served here: see Herald's log (dev mode sets demo-b up at start)" : "";
  }
}

function applyFormDefaults(app) {
  const form = APP_FORMS[app] ?? APP_FORMS.default;
  $("send-kind").value = form.kind;
  $("send-title-input").value = form.title;
  $("send-body").value = form.body;
}

/** Switches to the app chosen: signed in, the stream reconnects as the same user in that app
 *  (its own session), and the inbox, preferences, devices and presence are fetched there. */
async function switchApp() {
  const app = $("app-select").value;
  if (app === page.app) return;
  page.app = app;
  showApp();
  applyFormDefaults(app);
  if (!page.client) return;   // applies at sign-in
  const channels = [...page.client.channels];
  logSystem("app", `switching to app ${app}: reconnecting as ${page.userId}`);
  leaveApp();
  await connect(channels);
}

/** Stops the client and forgets what the page showed of its app. */
function leaveApp() {
  page.client?.stop();
  page.client = null;
  clearInterval(page.presenceTimer);
  inboxGeneration += 1;          // an answer still under way is the old app's
  prefsGeneration += 1;
  for (const entry of page.deliveries.values()) clearTimeout(entry.timer);
  page.deliveries.clear();
  page.webPush = null;
  page.prefs = null;
  $("deliveries").replaceChildren(el("p", { class: "empty" }, "Each notification you send shows its delivery record here."));
  $("webpush-state").hidden = true;
  $("webpush-shown").replaceChildren();
  $("send-result").textContent = "";
  $("inbox").replaceChildren(el("li", { class: "empty" }, "Loading…"));
  $("unread-badge").textContent = "0";
  $("unread-badge").dataset.count = "0";
  $("prefs-kinds").replaceChildren(el("li", { class: "empty" }, "Loading…"));
  $("device-list").replaceChildren();
  $("presence").replaceChildren();
}

function signOut() {
  page.client?.stop();
  page.client = null;
  clearInterval(page.presenceTimer);
  for (const entry of page.deliveries.values()) clearTimeout(entry.timer);
  prefsGeneration += 1;
  $("prefs-kinds").replaceChildren(el("li", { class: "empty" }, "Signed out."));
  setEnabled(false);
  $("conn-state").textContent = "signed out";
  $("conn-transport").textContent = "no transport";
  $("conn-pill").dataset.state = "idle";
  $("inbox").replaceChildren(el("li", { class: "empty" }, "Signed out."));
  $("device-list").replaceChildren();
  $("channel-list").replaceChildren();
}

function showStatus(status) {
  $("conn-state").textContent = status.state;
  $("conn-transport").textContent = { sse: "SSE", ws: "WebSocket", poll: "polling" }[status.transport] ?? "no transport";
  $("conn-pill").dataset.state = status.state;
  $("conn-pill").dataset.transport = status.transport ?? "";
  $("fact-connection").textContent = status.connectionId ?? "—";
  $("fact-last-id").textContent = status.lastEventId ?? "—";
  showAppState(status.appState);
  renderChannels();
}

function onReady(ready) {
  logRow({ id: ready.id, channel: ready.channels.join(", "), event: "ready",
           data: `${ready.transport} · connection ${ready.connection_id}`, kind: "system" });
  // Anything after `ready` arrives on the stream, so a GET now misses nothing.
  refreshInbox();
  refreshPresence();
}

function onMessage(message) {
  logRow({ id: message.id, channel: message.channel, event: message.retained ? `${message.event} (retained)` : message.event,
           data: compact(message.data) });
  if (message.event === "notification.created" || message.event === "notification.read") {
    refreshInbox();
    if (message.event === "notification.created" && page.client.appState === "foreground" && message.id) {
      page.client.ack(message.id);   // shown on screen: with `unless_acked` this cancels the push
    }
  }
}

function onReset({ channels }) {
  logSystem("reset", `gap on ${channels.join(", ")}: refetching`);
  if (channels.some((c) => c.startsWith("user:"))) refreshInbox();
}

// MARK: - Channels

function renderChannels() {
  const list = $("channel-list");
  const client = page.client;
  if (!client) return;
  const personal = `user:${page.userId}`;
  const live = new Set(client.status.channels ?? []);
  const chips = [el("li", { class: "chip personal", title: "always subscribed" }, personal)];
  for (const name of client.channels) {
    chips.push(el("li", { class: live.has(name) ? "chip" : "chip pending" },
      name,
      el("button", { type: "button", class: "chip-remove", "aria-label": `Unsubscribe from ${name}`,
                     onclick: () => client.removeChannel(name) }, "×")));
  }
  list.replaceChildren(...chips);
  const select = $("presence-channel");
  const wanted = [...client.channels, personal];
  const current = select.value;
  if ([...select.options].map((o) => o.value).join() !== wanted.join()) {
    select.replaceChildren(...wanted.map((name) => el("option", { value: name }, name)));
    select.value = wanted.includes(current) ? current : wanted[0];
  }
}

function addChannel(event) {
  event.preventDefault();
  const input = $("channel-input");
  const name = input.value.trim();
  if (!name || !input.reportValidity()) return;
  if (!GRANTS.some((grant) => name.startsWith(grant.slice(0, -1)))) {
    logSystem("problem", `${name} is not granted to the demo token (${GRANTS.join(", ")})`);
    return;
  }
  page.client.addChannel(name);
  input.value = "";
  renderChannels();
}

// MARK: - App state

function currentVisibilityState() {
  return document.visibilityState === "hidden" ? "background" : "foreground";
}

function showAppState(state) {
  $("state-foreground").setAttribute("aria-pressed", String(state === "foreground"));
  $("state-background").setAttribute("aria-pressed", String(state === "background"));
}

async function setAppState(state) {
  if (!page.client) return;
  showAppState(state);
  await page.client.setState(state);
  logSystem("state", `app state → ${state}`);
  refreshPresence();
}

// MARK: - Devices

function randomHex(bytes) {
  return [...crypto.getRandomValues(new Uint8Array(bytes))].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** A token of the shape each provider issues: APNs 32 bytes of hex; FCM `<id>:APA91b<base64url>`. */
function simulatedToken(platform) {
  if (platform === "ios") return randomHex(32);
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  const tail = [...crypto.getRandomValues(new Uint8Array(134))].map((b) => alphabet[b % 64]).join("");
  return `${randomHex(11).slice(0, 22)}:APA91b${tail}`;
}

async function registerDevice(event) {
  event.preventDefault();
  const platform = $("device-platform").value;
  if (platform === "web") return registerBrowser();
  const body = { platform, token: simulatedToken(platform), device_name: `Simulated ${platform === "ios" ? "iPhone" : "Pixel"}`,
                 app_version: "demo" };
  if (platform === "ios") body.environment = "sandbox";
  try {
    const { body: device } = await api("/v1/me/devices", { method: "POST", json: body });
    logSystem("device", `registered ${device.platform} device ${device.id} (${device.provider}) for session ${page.sessionId}`);
  } catch (error) {
    logSystem("problem", `device registration failed: ${error.message}`);
  }
  refreshDevices();
}

async function refreshDevices() {
  if (!page.client) return;
  try {
    const { body } = await api("/v1/me/devices");
    const items = body.devices.map((device) => el("li", { class: "device", dataset: { deviceId: device.id, platform: device.platform } },
      el("div", { class: "device-main" },
        el("strong", {}, device.platform === "ios" ? "iOS" : device.platform === "android" ? "Android" : device.platform),
        ` ${device.provider} `, el("code", {}, device.token),
        device.current ? el("span", { class: "tag" }, "this session") : null,
        device.active ? null : el("span", { class: "tag warn" }, "session ended")),
      el("button", { type: "button", class: "small", "aria-label": `Remove device ${device.id}`, onclick: () => removeDevice(device.id) }, "Remove")));
    $("device-list").replaceChildren(...(items.length ? items : [el("li", { class: "empty" }, "No device yet: register one, then switch to Background.")]));
  } catch (error) {
    logSystem("problem", `devices: ${error.message}`);
  }
}

async function removeDevice(id) {
  try {
    await api(`/v1/me/devices/${encodeURIComponent(id)}`, { method: "DELETE" });
  } catch (error) {
    logSystem("problem", `remove device: ${error.message}`);
  }
  refreshDevices();
}

// MARK: - Web Push: this browser as a device

const b64url = {
  encode: (bytes) => btoa(String.fromCharCode(...new Uint8Array(bytes))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, ""),
  decode: (text) => Uint8Array.from(atob(text.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (text.length % 4)) % 4)),
                                    (c) => c.charCodeAt(0)),
};

function concatBytes(...parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

function webPushState(text) {
  $("webpush-state").hidden = false;
  $("webpush-state").textContent = text;
}

/** The service worker (sw.js) once it is active; it shows the notifications. */
async function serviceWorker() {
  if (page.worker?.active) return page.worker;
  const registration = await navigator.serviceWorker.register("/demo/sw.js", { scope: "/demo/" });
  const worker = registration.installing ?? registration.waiting ?? registration.active;
  if (worker && worker.state !== "activated") {
    await new Promise((resolve) => {
      const check = () => worker.state === "activated" && resolve();
      worker.addEventListener("statechange", check);
      check();
    });
  }
  page.worker = registration;
  return registration;
}

/** A subscription made here, as a browser without a push service would need: our own P-256 key
 *  pair and auth secret (WebCrypto), and an endpoint at the provider double's push service. */
async function simulatedSubscription() {
  const { body: double } = await api("/v1/dev/push-double");
  const pair = await crypto.subtle.generateKey({ name: "ECDH", namedCurve: "P-256" }, false, ["deriveBits"]);
  const publicRaw = new Uint8Array(await crypto.subtle.exportKey("raw", pair.publicKey));
  const auth = crypto.getRandomValues(new Uint8Array(16));
  const id = `demo-${randomHex(12)}`;
  const endpoint = double.webpush_endpoint_base + id;
  return { id, endpoint, simulated: true, privateKey: pair.privateKey, publicRaw, auth,
           json: { endpoint, expirationTime: null, keys: { p256dh: b64url.encode(publicRaw), auth: b64url.encode(auth) } } };
}

/** A real subscription at this browser's push service, made with Herald's VAPID key. */
async function realSubscription(registration) {
  if (!("PushManager" in window)) throw new Error("this browser has no Push API");
  const response = await fetch("/v1/push/vapid-public-key");
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(body.message ?? "Herald has no VAPID key");
  const subscription = await registration.pushManager.subscribe({ userVisibleOnly: true,
                                                                  applicationServerKey: b64url.decode(body.public_key) });
  const json = subscription.toJSON();
  return { id: null, endpoint: json.endpoint, simulated: false, json };
}

async function registerBrowser() {
  try {
    if (!("serviceWorker" in navigator)) throw new Error("this browser has no service workers");
    const registration = await serviceWorker();
    const permission = "Notification" in window ? await Notification.requestPermission() : "denied";
    if (permission !== "granted") logSystem("problem", `notification permission is ${permission}: pushes are decrypted but not shown`);
    // The local push demo uses a simulated subscription: headless browsers have no push service,
    // and the double is where Herald's pushes are meant to land.
    const subscription = page.pushDemo ? await simulatedSubscription() : await realSubscription(registration);
    const { body: device } = await api("/v1/me/devices", { method: "POST", json: {
      platform: "web", subscription: subscription.json, app_version: "demo",
      device_name: subscription.simulated ? "This browser (simulated subscription)" : "This browser" } });
    page.webPush = subscription;
    webPushState(subscription.simulated
      ? `Simulated subscription at the provider double (${subscription.id}): pushes are decrypted here with WebCrypto and shown by the service worker.`
      : `Subscribed at ${new URL(subscription.endpoint).host}: pushes arrive at the service worker.`);
    logSystem("device", `registered this browser (${device.provider}) as device ${device.id} for session ${page.sessionId}`);
  } catch (error) {
    logSystem("problem", `web push registration failed: ${error.message}`);
    webPushState(`Web Push unavailable: ${error.message}`);
  }
  refreshDevices();
}

async function hmacSHA256(key, data) {
  const hmacKey = await crypto.subtle.importKey("raw", key, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return new Uint8Array(await crypto.subtle.sign("HMAC", hmacKey, data));
}

/** RFC 8291 + RFC 8188 (aes128gcm, one record), as a browser's push service client does it. */
async function decryptWebPush(body, subscription) {
  const text = (s) => new TextEncoder().encode(s);
  const salt = body.slice(0, 16);
  const idlen = body[20];
  if (body.length < 21 + idlen + 17 || idlen !== 65) throw new Error("not an aes128gcm body");
  const senderRaw = body.slice(21, 21 + idlen);
  const sender = await crypto.subtle.importKey("raw", senderRaw, { name: "ECDH", namedCurve: "P-256" }, false, []);
  const ecdh = new Uint8Array(await crypto.subtle.deriveBits({ name: "ECDH", public: sender }, subscription.privateKey, 256));
  const prkKey = await hmacSHA256(subscription.auth, ecdh);
  const ikm = await hmacSHA256(prkKey, concatBytes(text("WebPush: info\0"), subscription.publicRaw, senderRaw, [1]));
  const prk = await hmacSHA256(salt, ikm);
  const cek = (await hmacSHA256(prk, concatBytes(text("Content-Encoding: aes128gcm\0"), [1]))).slice(0, 16);
  const nonce = (await hmacSHA256(prk, concatBytes(text("Content-Encoding: nonce\0"), [1]))).slice(0, 12);
  const key = await crypto.subtle.importKey("raw", cek, "AES-GCM", false, ["decrypt"]);
  const padded = new Uint8Array(await crypto.subtle.decrypt({ name: "AES-GCM", iv: nonce }, key, body.slice(21 + idlen)));
  let end = padded.length;
  while (end > 0 && padded[end - 1] === 0) end -= 1;
  if (padded[end - 1] !== 2) throw new Error("no last-record delimiter");
  return JSON.parse(new TextDecoder().decode(padded.slice(0, end - 1)));
}

/** Pushes the double received for this page's simulated subscription: decrypt, then show. */
async function deliverSimulatedPushes() {
  const mine = page.webPush;
  if (!mine?.simulated) return;
  for (const request of page.doubleRequests.values()) {
    if (request.provider !== "webpush" || request.subscription !== mine.id || request.status !== 201
        || !request.encrypted_body || page.webPushPayloads.has(request.seq)) continue;
    let payload;
    try {
      payload = await decryptWebPush(b64url.decode(request.encrypted_body), mine);
    } catch (error) {
      page.webPushPayloads.set(request.seq, null);
      logSystem("problem", `push ${request.seq} did not decrypt: ${error.message}`);
      continue;
    }
    page.webPushPayloads.set(request.seq, payload);
    logSystem("webpush", `decrypted push ${request.seq}: ${payload.title ?? payload.kind}`);
    const registration = await serviceWorker();
    registration.active.postMessage({ type: "show-push", seq: request.seq, payload });
  }
}

function onWorkerMessage(event) {
  if (event.data?.type !== "push-shown") return;
  const { seq, shown, error } = event.data;
  const payload = page.webPushPayloads.get(seq);
  if (error) {
    logSystem("problem", `the service worker could not show push ${seq}: ${error}`);
    return;
  }
  if (!shown) return;
  $("webpush-shown").prepend(el("li", { class: "webpush-shown", dataset: { seq, tag: shown.tag ?? "",
                                                                           notificationId: payload?.data?.notification_id ?? "" } },
    el("strong", {}, shown.title), payload?.body ? ` — ${payload.body}` : ""));
}

// MARK: - Inbox

let inboxGeneration = 0;

async function refreshInbox() {
  if (!page.client) return;
  const generation = ++inboxGeneration;
  try {
    const [{ body: list }, { body: count }] = await Promise.all([
      api("/v1/me/notifications?limit=20"),
      api("/v1/me/notifications/unread-count"),
    ]);
    if (generation !== inboxGeneration) return;   // a newer refetch is under way
    $("unread-badge").textContent = String(count.unread_count);
    $("unread-badge").dataset.count = String(count.unread_count);
    const items = list.notifications.map((n) => el("li", { class: n.read ? "read" : "unread", dataset: { notificationId: n.id } },
      el("div", { class: "inbox-main" },
        el("strong", {}, n.title ?? n.kind),
        n.body ? el("span", { class: "inbox-body" }, n.body) : null,
        el("span", { class: "meta" }, `${n.kind} · ${new Date(n.created_at).toLocaleTimeString([], { hour12: false })}`)),
      n.read ? el("span", { class: "tag" }, "read")
        : el("button", { type: "button", class: "small", "aria-label": `Mark ${n.title ?? n.id} read`, onclick: () => markRead(n.id) }, "Mark read")));
    $("inbox").replaceChildren(...(items.length ? items : [el("li", { class: "empty" }, "No notifications yet.")]));
  } catch (error) {
    logSystem("problem", `inbox: ${error.message}`);
  }
}

async function markRead(id) {
  try {
    await api(`/v1/me/notifications/${encodeURIComponent(id)}/read`, { method: "POST" });
  } catch (error) {
    logSystem("problem", `mark read: ${error.message}`);
  }
  refreshInbox();   // the `notification.read` event refetches too; this covers polling
}

async function markAllRead() {
  try {
    await api("/v1/me/notifications/read-all", { method: "POST" });
  } catch (error) {
    logSystem("problem", `mark all read: ${error.message}`);
  }
  refreshInbox();
}

// MARK: - Push preferences

let prefsGeneration = 0;

async function refreshPreferences() {
  if (!page.client) return;
  const generation = ++prefsGeneration;
  try {
    const { body } = await api("/v1/me/push-preferences");
    if (generation !== prefsGeneration) return;
    renderPreferences(body);
  } catch (error) {
    logSystem("problem", `preferences: ${error.message}`);
  }
}

function renderPreferences(prefs) {
  page.prefs = prefs;
  $("prefs-enabled").checked = prefs.is_enabled;
  const enabled = new Set(prefs.enabled_events ?? []);
  const items = prefs.available_events.map((kind) => el("li", { class: "prefs-kind", dataset: { kind } },
    el("label", {},
      el("input", { type: "checkbox", checked: enabled.has(kind), disabled: !prefs.is_enabled, dataset: { kind },
                    onchange: savePreferences }),
      el("code", {}, kind))));
  const list = $("prefs-kinds");
  list.dataset.app = page.app;
  list.replaceChildren(...(items.length ? items
    : [el("li", { class: "empty" }, "This app has no catalog: while the switch is on, every kind is pushed.")]));
}

async function savePreferences() {
  const body = { is_enabled: $("prefs-enabled").checked };
  if (page.prefs?.available_events.length) {
    body.enabled_events = [...document.querySelectorAll("#prefs-kinds input:checked")].map((input) => input.dataset.kind);
  }
  const generation = ++prefsGeneration;
  try {
    const { body: saved } = await api("/v1/me/push-preferences", { method: "PUT", json: body });
    logSystem("preferences", `app ${page.app}: pushes ${saved.is_enabled ? "on" : "off"}`
      + (saved.available_events.length ? `, kinds ${saved.enabled_events.join(", ") || "none"}` : ""));
    if (generation === prefsGeneration) renderPreferences(saved);
  } catch (error) {
    logSystem("problem", `preferences: ${error.message}`);
    refreshPreferences();
  }
}

// MARK: - Presence

async function refreshPresence() {
  if (!page.client) return;
  const channel = $("presence-channel").value;
  if (!channel) return;
  try {
    const { body } = await api(`/v1/dev/channels/${encodeURIComponent(channel)}/presence`);
    const users = body.users.map((user) => el("li", {},
      el("strong", {}, user.user_id),
      el("ul", {}, user.sessions.map((session) => el("li", {
          class: "presence-session",
          dataset: { sessionId: session.session_id ?? "", state: session.foreground ? "foreground" : "background",
                     mine: String(session.session_id === page.sessionId) } },
        el("span", {}, `session ${session.session_id ?? "(none)"} `),
        el("span", { class: `tag ${session.foreground ? "fg" : "bg"}` }, session.foreground ? "foreground" : "background"),
        session.session_id === page.sessionId ? el("span", { class: "tag" }, "you") : null,
        el("ul", { class: "connections" }, session.connections.map((c) => el("li", {},
          el("code", {}, c.connection_id), ` ${c.transport} · ${c.state}${c.lease_fresh ? "" : " (lease stale)"}`))))))));
    $("presence").replaceChildren(
      el("p", {}, el("strong", {}, String(body.connections)), ` connection${body.connections === 1 ? "" : "s"} on `, el("code", {}, body.channel)),
      users.length ? el("ul", { class: "presence-users" }, users) : el("p", { class: "empty" }, "Nobody."));
  } catch (error) {
    $("presence").replaceChildren(el("p", { class: "empty" }, `presence: ${error.message}`));
  }
}

// MARK: - Sending and delivery records

async function send(event) {
  event.preventDefault();
  if (!$("send-form").reportValidity()) return;
  const body = { kind: $("send-kind").value.trim(), push: { policy: $("send-policy").value } };
  // Empty: the app catalog's text for the kind.
  if ($("send-title-input").value) body.title = $("send-title-input").value;
  if ($("send-body").value) body.body = $("send-body").value;
  if ($("send-live").checked) body.live = { channel: DEFAULT_CHANNEL, event: "status", data: { state: "done", at: Date.now() } };
  const output = $("send-result");
  try {
    const { body: answer } = await api("/v1/dev/notifications", { method: "POST", json: body });
    const first = answer.notifications[0];
    output.dataset.notificationId = first?.id ?? "";
    output.textContent = `${first?.id ?? "nothing stored"}: live delivered ${answer.live_delivered}, push queued ${answer.push_queued}, `
      + `suppressed ${answer.push_suppressed}, skipped ${answer.skipped}`;
    for (const n of answer.notifications) trackDelivery(n.id);
  } catch (error) {
    output.dataset.notificationId = "";
    output.textContent = `refused: ${error.message}`;
  }
}

function trackDelivery(id) {
  const container = $("deliveries");
  container.querySelector(".empty")?.remove();
  const card = el("article", { class: "delivery", dataset: { notificationId: id }, "aria-label": `Delivery record of ${id}` },
    el("header", {}, el("code", {}, id), el("button", { type: "button", class: "small", onclick: () => pollDelivery(id, true) }, "Refresh")),
    el("ol", { class: "outcomes" }),
    el("div", { class: "double" }));
  container.prepend(card);
  page.deliveries.set(id, { card, timer: null, started: Date.now(), record: null });
  pollDelivery(id);
}

async function pollDelivery(id, manual = false) {
  const entry = page.deliveries.get(id);
  if (!entry || !page.client) return;
  clearTimeout(entry.timer);
  try {
    const { body: record } = await api(`/v1/dev/notifications/${encodeURIComponent(id)}/deliveries`);
    entry.record = record;
    renderOutcomes(entry, record);
    if (page.pushDemo && record.deliveries.some((d) => d.outcome === "sent" || d.outcome === "failed" || d.outcome === "retrying")) {
      await refreshDoubleRequests();
    }
    renderDoubleRequests(entry, id);
    const settled = record.planned && record.targets.every((t) => SETTLED.has(t.outcome));
    const pushesSeen = !page.pushDemo || record.deliveries.filter((d) => d.outcome === "sent").length <= matchingRequests(id).length;
    entry.card.dataset.settled = String(settled && pushesSeen);
    if ((!settled || !pushesSeen) && Date.now() - entry.started < DELIVERY_POLL_LIMIT_MS) {
      entry.timer = setTimeout(() => pollDelivery(id), DELIVERY_POLL_MS);
    }
  } catch (error) {
    entry.card.querySelector(".outcomes").replaceChildren(el("li", { class: "problem" }, error.message));
    if (!manual && Date.now() - entry.started < DELIVERY_POLL_LIMIT_MS) entry.timer = setTimeout(() => pollDelivery(id), DELIVERY_POLL_MS * 2);
  }
}

const OUTCOME_LABELS = {
  live_delivered: "delivered live",
  suppressed_foreground: "push suppressed (foreground)",
  suppressed_acked: "push suppressed (acked)",
  queued: "push queued",
  sent: "pushed",
  retrying: "push retrying",
  failed: "push failed",
  dead: "push dead-lettered",
  skipped_preferences: "skipped (preferences)",
  skipped_session: "skipped (session ended)",
  skipped_audience: "skipped (audience)",
  skipped_policy: "skipped (policy never)",
  expired: "expired",
  opened: "opened",
};

function renderOutcomes(entry, record) {
  const items = record.deliveries.map((d) => el("li", { class: `outcome outcome-${d.outcome}`, dataset: { outcome: d.outcome } },
    el("span", { class: "label" }, OUTCOME_LABELS[d.outcome] ?? d.outcome),
    el("span", { class: "target" }, d.device_id ? `device ${d.device_id}` : d.connection_id ? `connection ${d.connection_id}` : ""),
    d.detail ? el("span", { class: "detail" }, d.detail) : null,
    d.provider_message_id ? el("span", { class: "detail" }, `provider id ${d.provider_message_id}`) : null,
    el("time", { datetime: d.at }, new Date(d.at).toLocaleTimeString([], { hour12: false }))));
  if (!record.planned) items.push(el("li", { class: "outcome" }, "planning…"));
  if (items.length === 0) items.push(el("li", { class: "outcome" }, "no connection and no device: stored in the inbox only"));
  entry.card.querySelector(".outcomes").replaceChildren(...items);
}

// MARK: - The provider double (local push demo)

async function probePushDemo() {
  try {
    await api("/v1/dev/push-double/requests?since=0&provider=apns");
    page.pushDemo = true;
  } catch (error) {
    page.pushDemo = error.status === 404 ? false : null;
  }
  $("push-demo-state").textContent = page.pushDemo ? "on (local provider double)" : page.pushDemo === false ? "off" : "unknown";
  $("push-demo-pill").dataset.on = String(page.pushDemo);
  $("push-demo-pill").title = page.pushDemo
    ? "Pushes go over HTTP/2 and TLS, with signed JWTs, to the local APNs/FCM/Web Push double."
    : "Start with HERALD_DEMO_PUSH=1 scripts/run to send pushes to the local APNs/FCM/Web Push double.";
  if (page.pushDemo) await refreshDoubleRequests();
}

async function refreshDoubleRequests() {
  try {
    const { body } = await api(`/v1/dev/push-double/requests?since=${page.doubleSince}`);
    for (const request of body.requests) page.doubleRequests.set(request.seq, request);
    // Ask again for requests the double had not answered yet; after that, only for newer ones.
    const seqs = [...page.doubleRequests.keys()];
    const open = seqs.filter((seq) => page.doubleRequests.get(seq).status === null);
    page.doubleSince = open.length ? Math.min(...open) - 1 : Math.max(0, ...seqs);
    await deliverSimulatedPushes();
  } catch (error) {
    logSystem("problem", `provider double: ${error.message}`);
  }
}

/** What a request carried: the double's view, or for this page's Web Push subscription what the
 *  page decrypted (the double does not hold its key). */
function pushedPayload(request) {
  return request.body ?? page.webPushPayloads.get(request.seq) ?? null;
}

/** The notification id a push carries: APNs at the payload's top level, FCM in `message.data`,
 *  Web Push in `data`. */
function pushedNotificationId(request) {
  const body = pushedPayload(request);
  return body?.notification_id ?? body?.message?.data?.notification_id ?? body?.data?.notification_id ?? null;
}

function matchingRequests(id) {
  return [...page.doubleRequests.values()].filter((request) => pushedNotificationId(request) === id);
}

function renderDoubleRequests(entry, id) {
  const requests = matchingRequests(id);
  const box = entry.card.querySelector(".double");
  if (!page.pushDemo || requests.length === 0) {
    box.replaceChildren();
    return;
  }
  box.replaceChildren(...requests.map((request) => el("details", { class: "double-request", dataset: { provider: request.provider } },
    el("summary", {}, `${request.provider.toUpperCase()} double received ${request.method} ${request.path} → ${request.status} ${request.outcome ?? ""}`),
    el("h3", {}, "Headers"),
    el("table", { class: "headers" }, el("tbody", {}, Object.entries(request.headers ?? {}).map(([name, value]) =>
      el("tr", {}, el("th", { scope: "row" }, name), el("td", {}, el("code", {}, displayHeader(name, value))))))),
    request.jwt ? [el("h3", {}, "Provider token (JWT, decoded)"), el("pre", {}, JSON.stringify(request.jwt, null, 2))] : null,
    el("h3", {}, request.body === null && page.webPushPayloads.get(request.seq) ? "Payload (decrypted in this page with WebCrypto)" : "Payload"),
    el("pre", {}, JSON.stringify(pushedPayload(request), null, 2)),
    request.notes?.length ? [el("h3", {}, "Notes"), el("ul", {}, request.notes.map((note) => el("li", {}, note)))] : null)));
}

/** A bearer token is shown by its start only: enough to see it is a JWT. */
function displayHeader(name, value) {
  const text = Array.isArray(value) ? value.join(", ") : String(value);
  if (name.toLowerCase() === "authorization" && text.length > 40) return `${text.slice(0, 32)}…`;
  return text;
}

// MARK: - Wiring

function init() {
  const user = params.get("user") ?? `demo-${randomHex(3)}`;
  $("user-id").value = user;
  const app = params.get("app");
  if (app && /^[a-z0-9][a-z0-9-]{0,62}$/.test(app)) {
    if (![...$("app-select").options].some((o) => o.value === app)) $("app-select").append(el("option", { value: app }, app));
    page.app = app;
    applyFormDefaults(app);
  }
  showApp();
  $("app-select").addEventListener("change", switchApp);
  $("prefs-enabled").addEventListener("change", savePreferences);
  $("prefs-refresh").addEventListener("click", refreshPreferences);
  const transport = params.get("transport");
  if (transport && [...$("transport-select").options].some((o) => o.value === transport)) $("transport-select").value = transport;
  setEnabled(false);
  $("signin-form").addEventListener("submit", signIn);
  $("sign-out").addEventListener("click", signOut);
  $("reconnect").addEventListener("click", () => page.client?.reconnect());
  $("channel-form").addEventListener("submit", addChannel);
  $("state-foreground").addEventListener("click", () => {
    $("follow-visibility").checked = false;   // a manual choice wins over the page's visibility
    setAppState("foreground");
  });
  $("state-background").addEventListener("click", () => {
    $("follow-visibility").checked = false;
    setAppState("background");
  });
  document.addEventListener("visibilitychange", () => {
    if ($("follow-visibility").checked) setAppState(currentVisibilityState());
  });
  $("device-form").addEventListener("submit", registerDevice);
  navigator.serviceWorker?.addEventListener("message", onWorkerMessage);
  navigator.serviceWorker?.startMessages();   // the page at / is not in the worker's scope: take its messages anyway
  $("send-form").addEventListener("submit", send);
  $("read-all").addEventListener("click", markAllRead);
  $("presence-refresh").addEventListener("click", refreshPresence);
  $("presence-channel").addEventListener("change", refreshPresence);
  $("log-clear").addEventListener("click", () => $("event-log").replaceChildren());
  // A page kept in the back/forward cache would otherwise keep its stream open while frozen:
  // Herald would count it as a live (and possibly foreground) connection of this session.
  window.addEventListener("pagehide", () => page.client?.stop());
  window.addEventListener("pageshow", (event) => {
    if (event.persisted && page.client) page.client.start().catch((error) => logSystem("problem", error.message));
  });
  if (params.get("autostart") === "1") $("signin-form").requestSubmit();
}

init();
