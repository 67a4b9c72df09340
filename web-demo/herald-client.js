// herald-client.js — a small browser client for Herald's streams (docs/protocol.md).
//
// It holds what every browser app needs and nothing page-specific:
// - transport fallback: EventSource (SSE) first; WebSocket when asked for (`transport: "ws"`) or
//   when SSE fails before its `ready`; polling the inbox as the last resort;
// - resume: the last event id goes back as `last_event_id` (SSE reopen, WebSocket URL) so nothing
//   is lost or repeated across reconnects; EventSource's own reconnects send `Last-Event-ID`
//   (which Herald prefers to the URL's older `last_event_id`), and a stream EventSource reopened
//   reports the app state again when it changed since the URL was made;
// - make-before-break over SSE: a token refresh or a channel change opens the new stream (from the
//   last id) and closes the old one only once the new one is `ready`, so the session is never
//   without a stream (a notification in such a gap would be pushed, then replayed live); what
//   both streams carry is shown once (duplicates are dropped by event id);
// - `reset` (a gap Herald cannot fill), `shutdown` (reconnect), `error` (slow consumer, expired
//   token) and WebSocket close codes;
// - app state: `setState("foreground" | "background")` over the transport in use, with a lease
//   refresh while in the foreground over SSE (Herald's foreground is a lease, RT-7a); the latest
//   state always reaches the server: over WebSocket it rides the socket once it is ready (never an
//   HTTP request that could overtake or be overtaken by it), and HTTP reports go one at a time;
// - acks (`ack(ids)`), channel changes (`addChannel` / `removeChannel`) and token refresh.
//
// Usage:
//   import { HeraldClient } from "/demo/herald-client.js";
//   const client = new HeraldClient({ getToken: async () => ({ access_token, expires_at }),
//                                     channels: ["generation:demo"] });
//   client.addEventListener("message", (e) => console.log(e.detail));   // {id, channel, event, offset, data}
//   client.addEventListener("reset", (e) => refetch(e.detail.channels));
//   client.addEventListener("status", (e) => show(e.detail));            // {state, transport, …}
//   client.start();
//
// Events (CustomEvent, payload in `detail`): `status`, `ready`, `message`, `reset`, `poll`
// (polling mode: time to refetch), `shutdown`, `problem` (something went wrong, with a text).
//
// EventSource only reports the event names it listens for, so over SSE the client listens for
// `eventNames` (a default list of common names; `listen(name)` adds one). WebSocket gets every name.

/** The event names a published message may carry that SSE listens for by default. */
export const DEFAULT_EVENT_NAMES = [
  "message", "update", "updated", "status", "progress", "created", "deleted", "changed", "done",
  "notification.created", "notification.read",
];

/** Names of Herald's own stream events (never published by apps). */
const PROTOCOL_EVENTS = new Set(["ready", "reset", "error", "shutdown", "subscribed", "unsubscribed", "pong", "refreshed"]);

/** How many message ids are remembered to drop duplicates (a replacement stream's replay of
 *  what the old one showed while both were open: a few, unless the server was slow to open it). */
const SEEN_IDS = 1024;

/** Transports, in fallback order. */
export const TRANSPORTS = ["sse", "ws", "poll"];

export class HeraldClient extends EventTarget {
  /**
   * @param {object} options
   * @param {() => Promise<{access_token: string, expires_at?: number}>} options.getToken
   *   a fresh access token (called at start, on expiry and after a 401).
   * @param {string[]} [options.channels] channels besides the personal `user:{sub}`.
   * @param {"auto"|"sse"|"ws"|"poll"} [options.transport] "auto" (SSE, then WS, then polling) or a
   *   starting point; fallback still goes down the list from there.
   * @param {"foreground"|"background"} [options.state] the app state at start.
   * @param {string} [options.baseUrl] Herald's origin; default the page's.
   * @param {string[]} [options.eventNames] SSE event names to listen for.
   * @param {number} [options.pollIntervalMs] polling period (10 s).
   * @param {number} [options.leaseRefreshMs] how often a foreground SSE client reports its state
   *   (keep it under HERALD_FOREGROUND_LEASE_SECONDS, 45 s).
   * @param {number} [options.failuresBeforeFallback] failed opens (no `ready`) before the next transport.
   */
  constructor(options) {
    super();
    if (typeof options?.getToken !== "function") throw new TypeError("HeraldClient needs getToken()");
    this.getToken = options.getToken;
    this.baseUrl = options.baseUrl ?? window.location.origin;
    this.preferred = options.transport && options.transport !== "auto" ? options.transport : "sse";
    if (!TRANSPORTS.includes(this.preferred)) throw new RangeError(`unknown transport ${options.transport}`);
    this.channels = [...new Set(options.channels ?? [])];
    this.appState = options.state ?? "foreground";
    this.eventNames = new Set(options.eventNames ?? DEFAULT_EVENT_NAMES);
    this.pollIntervalMs = options.pollIntervalMs ?? 10_000;
    this.leaseRefreshMs = options.leaseRefreshMs ?? 20_000;
    this.failuresBeforeFallback = options.failuresBeforeFallback ?? 2;

    this.transport = null;        // "sse" | "ws" | "poll" while running
    this.state = "idle";          // idle | connecting | open | reconnecting | polling | closed
    this.lastEventId = null;      // the resume cursor
    this.ready = null;            // the last `ready` data: connection_id, session_id, user_id, channels
    this.token = null;
    this.failures = 0;            // opens in a row that never reached `ready`
    this.attempt = 0;             // reconnects in a row, for the backoff
    this.source = null;
    this.nextSource = null;       // SSE: the stream replacing `source`, until its `ready`
    this.seenIds = new Set();     // ids of the last messages shown, to drop what two streams both carry
    this.seenOrder = [];
    this.stateReport = null;      // the state report in flight (one at a time)
    this.stateReportAgain = false;
    this.socket = null;
    this.timers = new Map();
    this.running = false;
  }

  // MARK: - Lifecycle

  /** Signs in (first token) and opens the preferred transport. */
  async start() {
    this.running = true;
    await this.#refreshToken();
    this.#open(this.preferred);
  }

  /** Closes everything; `start()` may be called again. */
  stop() {
    this.running = false;
    this.#closeTransport();
    for (const id of this.timers.values()) clearTimeout(id);
    this.timers.clear();
    this.transport = null;
    this.#setState("closed");
  }

  /** Drops the current connection and opens the preferred transport again (keeps the cursor). */
  reconnect() {
    if (!this.running) return;
    this.failures = 0;
    this.attempt = 0;
    this.#open(this.preferred);
  }

  /** A snapshot for display. */
  get status() {
    return {
      state: this.state,
      transport: this.transport,
      connectionId: this.ready?.connection_id ?? null,
      sessionId: this.ready?.session_id ?? null,
      userId: this.ready?.user_id ?? null,
      channels: this.ready?.channels ?? null,
      requestedChannels: [...this.channels],
      lastEventId: this.lastEventId,
      appState: this.appState,
    };
  }

  // MARK: - Channels, state, acks

  /** Subscribes to `name`: a `subscribe` message over WebSocket; over SSE a stream with the new
   *  list and the last cursor replaces the open one (make-before-break), so nothing is missed on
   *  the other channels and the session is never without a stream. */
  addChannel(name) {
    if (this.channels.includes(name)) return;
    this.channels.push(name);
    if (this.transport === "ws" && this.#socketReady()) {
      this.#send({ type: "subscribe", channels: [name] });
    } else if (this.transport === "sse") {
      this.#reopenSSE();   // the new list goes in the URL, with the cursor
    } else if (this.transport === "ws") {
      this.#open("ws");
    }
    this.#emitStatus();
  }

  /** Unsubscribes from `name` (the personal channel cannot be removed). */
  removeChannel(name) {
    if (!this.channels.includes(name)) return;
    this.channels = this.channels.filter((c) => c !== name);
    if (this.transport === "ws" && this.#socketReady()) {
      this.#send({ type: "unsubscribe", channels: [name] });
    } else if (this.transport === "sse") {
      this.#reopenSSE();   // the new list goes in the URL, with the cursor
    } else if (this.transport === "ws") {
      this.#open("ws");
    }
    this.#emitStatus();
  }

  /** Reports the app's visibility: a `state` message over WebSocket, else
   *  `PUT /v1/me/sessions/current/state` (which sets every live connection of the session).
   *  A WebSocket not ready yet gets the state when its `ready` comes: a `PUT` sent meanwhile would
   *  miss the connection (not registered yet) or, arriving late, undo a later `state` message. */
  async setState(state) {
    if (state !== "foreground" && state !== "background") throw new RangeError(`unknown state ${state}`);
    this.appState = state;
    this.#emitStatus();
    this.#scheduleLeaseRefresh();
    if (this.transport === "ws") {
      if (this.#socketReady()) this.#send({ type: "state", state });
      return;
    }
    if (!this.token) return;
    await this.#reportState();
  }

  /** Records that the app showed these events (`ack` over WebSocket, else `POST /v1/me/acks`);
   *  with the `unless_acked` push policy this cancels their pushes. Over WebSocket the server
   *  answers `acked` once stored, or an `error` naming the `ids` (then they go again over HTTP). */
  async ack(ids) {
    const list = [ids].flat().filter(Boolean);
    if (list.length === 0) return;
    if (this.transport === "ws" && this.#socketReady()) {
      this.#send({ type: "ack", ids: list });
      return;
    }
    await this.#postAcks(list);
  }

  async #postAcks(list) {
    await this.fetch("/v1/me/acks", { method: "POST", json: { ids: list } }).catch((error) => this.#problem(`ack failed: ${error.message}`));
  }

  /** Listens for one more SSE event name (WebSocket delivers every name anyway). */
  listen(name) {
    if (this.eventNames.has(name)) return;
    this.eventNames.add(name);
    for (const source of [this.source, this.nextSource]) {
      if (source) source.addEventListener(name, (e) => this.#onSSEMessage(name, e));
    }
  }

  /**
   * `fetch` against Herald with the access token. `json` sends a JSON body; a 401 gets one retry
   * with a fresh token. Resolves with the Response (any status).
   */
  async fetch(path, { method = "GET", json, headers = {} } = {}) {
    const send = async () => {
      if (!this.token) await this.#refreshToken();
      const init = { method, headers: { ...headers, Authorization: `Bearer ${this.token.access_token}` } };
      if (json !== undefined) {
        init.headers["Content-Type"] = "application/json";
        init.body = JSON.stringify(json);
      }
      return fetch(new URL(path, this.baseUrl), init);
    };
    let response = await send();
    if (response.status === 401) {
      const body = await response.clone().json().catch(() => ({}));
      if (body.error === "invalid_token") {
        await this.#refreshToken();
        response = await send();
      }
    }
    return response;
  }

  // MARK: - Transports

  #open(transport) {
    if (!this.running) return;
    this.#closeTransport();
    this.transport = transport;
    this.ready = null;
    this.#setState(this.attempt > 0 ? "reconnecting" : "connecting");
    if (transport === "sse") this.#openSSE();
    else if (transport === "ws") this.#openWebSocket();
    else this.#startPolling();
  }

  #closeTransport() {
    this.#clearTimer("poll");
    this.#clearTimer("reconnect");
    this.#clearTimer("lease");
    for (const source of [this.source, this.nextSource]) source?.close();
    this.source = null;
    this.nextSource = null;
    if (this.socket) {
      const socket = this.socket;
      this.socket = null;
      socket.onopen = socket.onmessage = socket.onerror = socket.onclose = null;
      if (socket.readyState === WebSocket.OPEN || socket.readyState === WebSocket.CONNECTING) socket.close(1000, "client closed");
    }
  }

  /** Another attempt at the same transport after a backoff, or the next transport after
   *  `failuresBeforeFallback` opens that never got `ready`. */
  #retry(reason, { neverOpened }) {
    if (!this.running) return;
    if (neverOpened) this.failures += 1;
    const index = TRANSPORTS.indexOf(this.transport);
    if (neverOpened && this.failures >= this.failuresBeforeFallback && index < TRANSPORTS.length - 1) {
      const next = TRANSPORTS[index + 1];
      this.#problem(`${this.transport} failed (${reason}); falling back to ${next}`);
      this.failures = 0;
      this.attempt = 0;
      this.#open(next);
      return;
    }
    this.attempt += 1;
    // Full jitter on 0.5 s … 15 s, so a restarted server is not hit by every client at once.
    const delay = Math.random() * Math.min(15_000, 500 * 2 ** this.attempt);
    this.#setState("reconnecting");
    this.#setTimer("reconnect", delay, () => this.#open(this.transport));
  }

  // SSE

  /** Replaces an open SSE stream without a gap: the new one (new token, channels, state, from the
   *  last id) opens beside it, and the old one is closed at the new one's `ready`. A stream not
   *  open yet is simply reopened. */
  #reopenSSE() {
    if (!this.running) return;
    if (!this.source || !this.ready || this.source.readyState !== EventSource.OPEN) {
      this.#open("sse");
      return;
    }
    this.nextSource?.close();
    this.#openSSE({ replacing: true });
  }

  /** Opens an EventSource: the current stream, or with `replacing` the one that takes over from
   *  it at its `ready` (`#reopenSSE`). */
  #openSSE({ replacing = false } = {}) {
    const url = new URL("/v1/stream", this.baseUrl);
    url.searchParams.set("access_token", this.token.access_token);
    if (this.channels.length) url.searchParams.set("channels", this.channels.join(","));
    const openedIn = this.appState;
    url.searchParams.set("state", openedIn);
    if (this.lastEventId) url.searchParams.set("last_event_id", this.lastEventId);
    const source = new EventSource(url);
    if (replacing) this.nextSource = source;
    else this.source = source;
    let opened = false;
    // The replacement takes over: from here on it is the stream, and the old one goes.
    const takeOver = () => {
      if (this.nextSource !== source) return;
      this.source?.close();
      this.source = source;
      this.nextSource = null;
    };

    source.addEventListener("ready", (e) => {
      takeOver();
      if (this.source !== source) return;
      opened = true;
      this.#onReady(JSON.parse(e.data), e.lastEventId);
      // EventSource reconnects by itself to the URL it was made with, whose `?state=` is the
      // state at that time: a stream it reopened after the app reported another state (or one
      // reported before this stream existed) opens in the old one. Say the current one at once,
      // or a hidden page's stream stays foreground and its pushes are suppressed (breaker10).
      if (this.appState !== openedIn) this.#reportState();
      this.#scheduleLeaseRefresh();
    });
    source.addEventListener("reset", (e) => this.#onReset(JSON.parse(e.data), e.lastEventId));
    source.addEventListener("shutdown", () => this.#onShutdown());
    source.addEventListener("error", (e) => {
      // A replacement that fails before `ready` (refused, unreachable) ends the old stream too and
      // goes the usual way: fresh token, retry or fall back, as a reopen always did.
      if (this.nextSource === source && !opened) takeOver();
      if (this.source !== source) return;
      if (e instanceof MessageEvent && e.data) {
        // Herald's own `event: error` (slow_consumer, token_expired, session_ended).
        this.#onServerError(JSON.parse(e.data));
        return;
      }
      // A network error or a refused stream (401/403/429 close the EventSource for good).
      if (source.readyState === EventSource.CLOSED || !opened) {
        source.close();
        this.source = null;
        // EventSource hides the status: the token may have expired, so take a fresh one first.
        this.#refreshToken().catch(() => {}).finally(() => {
          if (this.running && this.source === null && this.transport === "sse") {
            this.#retry(opened ? "stream closed" : "stream refused or unreachable", { neverOpened: !opened });
          }
        });
      } else {
        this.#setState("reconnecting");   // EventSource reconnects by itself, with Last-Event-ID
      }
    });
    for (const name of this.eventNames) source.addEventListener(name, (e) => this.#onSSEMessage(name, e));
  }

  #onSSEMessage(name, e) {
    if (PROTOCOL_EVENTS.has(name)) return;
    let body;
    try {
      body = JSON.parse(e.data);
    } catch {
      return;
    }
    // A retained message carries no id: the position stays where it was.
    const id = e.lastEventId && e.lastEventId !== this.lastEventId ? e.lastEventId : null;
    this.#onMessage({ id, channel: body.channel, event: name, offset: body.offset, data: body.data, retained: id === null });
  }

  // WebSocket

  #openWebSocket() {
    const url = new URL("/v1/ws", this.baseUrl);
    url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
    if (this.channels.length) url.searchParams.set("channels", this.channels.join(","));
    const openedIn = this.appState;
    url.searchParams.set("state", openedIn);
    if (this.lastEventId) url.searchParams.set("last_event_id", this.lastEventId);
    let socket;
    try {
      socket = new WebSocket(url);
    } catch (error) {
      this.#retry(`cannot open a WebSocket: ${error.message}`, { neverOpened: true });
      return;
    }
    this.socket = socket;
    let opened = false;
    // The token goes in the first message, not the URL (no token in logs).
    socket.onopen = () => socket.send(JSON.stringify({ type: "auth", access_token: this.token.access_token }));
    socket.onmessage = (e) => {
      let message;
      try {
        message = JSON.parse(e.data);
      } catch {
        return;
      }
      switch (message.type) {
        case "ready":
          opened = true;
          this.#onReady(message, message.id);
          // The URL's `?state=` is the state when the socket was made; one reported since (before
          // `ready`, when no message could carry it) goes now, on the socket, in order.
          if (this.appState !== openedIn) this.#send({ type: "state", state: this.appState });
          break;
        case "event":
          this.#onMessage({ id: message.id ?? null, channel: message.channel, event: message.event, offset: message.offset,
                            data: message.data, retained: message.retained === true });
          break;
        case "subscribed":
        case "unsubscribed":
          if (this.ready) {
            const current = new Set(this.ready.channels);
            for (const c of message.channels) message.type === "subscribed" ? current.add(c) : current.delete(c);
            this.ready = { ...this.ready, channels: [...current] };
          }
          this.#emitStatus();
          break;
        case "reset":
          this.#onReset(message, message.id);
          break;
        case "shutdown":
          this.#onShutdown();
          break;
        case "error":
          if (Array.isArray(message.ids)) {
            // An ack held in memory only (storage failed, or too many waiting): POST keeps it,
            // answering only once it is stored.
            this.#problem(`ack not stored: ${message.error}; sending it again`);
            this.#postAcks(message.ids);
            break;
          }
          this.#onServerError(message);
          break;
        case "acked":     // the ack is stored (ADR 0026): nothing to do
        case "refreshed":
          break;
      }
    };
    socket.onclose = (e) => {
      if (this.socket !== socket) return;
      this.socket = null;
      this.#onWebSocketClose(e.code, e.reason, opened);
    };
    socket.onerror = () => {};   // onclose follows with the code
  }

  #socketReady() {
    return this.socket && this.socket.readyState === WebSocket.OPEN && this.ready;
  }

  #send(message) {
    this.socket.send(JSON.stringify(message));
  }

  async #onWebSocketClose(code, reason, opened) {
    switch (code) {
      case 4001: // session ended: signing in again is the app's call
        this.#problem("the session has ended; sign in again");
        this.stop();
        return;
      case 4003: // token expired
      case 1008: // authentication failed or timed out (or too many streams)
        await this.#refreshToken().catch(() => {});
        this.#retry(`closed ${code} ${reason}`, { neverOpened: !opened });
        return;
      default: // 1001 shutdown/idle, 1013 slow consumer, 1006 network…: resume with the cursor
        this.#retry(`closed ${code}${reason ? " " + reason : ""}`, { neverOpened: !opened });
    }
  }

  // Polling

  #startPolling() {
    this.#setState("polling");
    const tick = () => {
      this.dispatchEvent(new CustomEvent("poll", { detail: { at: Date.now() } }));
      this.#setTimer("poll", this.pollIntervalMs, tick);
    };
    tick();
  }

  // MARK: - Stream events

  #onReady(data, id) {
    this.failures = 0;
    this.attempt = 0;
    this.ready = data;
    if (id) this.lastEventId = id;
    this.#setState("open");
    this.dispatchEvent(new CustomEvent("ready", { detail: { ...data, id: id ?? null, transport: this.transport } }));
  }

  #onMessage(message) {
    if (message.id) {
      this.lastEventId = message.id;
      // A replacement stream replays from the id it was opened with what the old one may have
      // shown meanwhile: the position moves on, the message is not shown twice.
      if (this.seenIds.has(message.id)) return;
      this.seenIds.add(message.id);
      this.seenOrder.push(message.id);
      if (this.seenOrder.length > SEEN_IDS) this.seenIds.delete(this.seenOrder.shift());
    }
    this.dispatchEvent(new CustomEvent("message", { detail: message }));
    this.#emitStatus();
  }

  #onReset(data, id) {
    if (id) this.lastEventId = id;
    this.dispatchEvent(new CustomEvent("reset", { detail: { channels: data.channels ?? [] } }));
  }

  #onShutdown() {
    this.dispatchEvent(new CustomEvent("shutdown", { detail: {} }));
    this.#closeTransport();
    this.#retry("server shutting down", { neverOpened: false });
  }

  async #onServerError(data) {
    this.#problem(`server: ${data.error}${data.message ? ` (${data.message})` : ""}`);
    // WebSocket: a refused message leaves the socket open; when it ends, a close code follows.
    if (this.transport !== "sse") return;
    // SSE: the server ends the stream after `error`; take over from EventSource's own reconnect.
    const hadReady = Boolean(this.ready);
    this.#closeTransport();
    if (data.error === "session_ended") {
      this.stop();
      return;
    }
    if (data.error === "token_expired") await this.#refreshToken().catch(() => {});
    this.#retry(data.error, { neverOpened: !hadReady });
  }

  // MARK: - Helpers

  async #refreshToken() {
    this.token = await this.getToken();
    if (this.token.expires_at) {
      // Renew a minute before `exp`: WebSocket sends `refresh`, SSE reopens with the cursor.
      const inMs = this.token.expires_at * 1000 - Date.now() - 60_000;
      this.#setTimer("token", Math.max(inMs, 5_000), async () => {
        await this.#refreshToken().catch((error) => this.#problem(`token refresh failed: ${error.message}`));
        if (this.transport === "ws" && this.#socketReady()) this.#send({ type: "refresh", access_token: this.token.access_token });
        else if (this.transport === "sse") this.#reopenSSE();
      });
    }
  }

  /** `PUT /v1/me/sessions/current/state` with the current state, one request at a time: a report
   *  asked for while one is in flight is sent after it, with the state of that moment, so an older
   *  state can never land last. Resolves once the latest state has been sent. */
  async #reportState() {
    if (this.stateReport) {
      this.stateReportAgain = true;
      return this.stateReport;
    }
    this.stateReport = (async () => {
      do {
        this.stateReportAgain = false;
        try {
          const response = await this.fetch("/v1/me/sessions/current/state", { method: "PUT", json: { state: this.appState } });
          if (!response.ok) this.#problem(`state report refused: ${response.status}`);
        } catch (error) {
          this.#problem(`state report failed: ${error.message}`);
        }
      } while (this.stateReportAgain);
    })().finally(() => {
      this.stateReport = null;
    });
    return this.stateReport;
  }

  /** Over SSE the server only hears the client through requests, so a foreground client says so
   *  again before its lease runs out (WebSocket clients answer pings, which counts). */
  #scheduleLeaseRefresh() {
    this.#clearTimer("lease");
    if (this.transport !== "sse" || this.appState !== "foreground") return;
    this.#setTimer("lease", this.leaseRefreshMs, async () => {
      await this.#reportState();
      this.#scheduleLeaseRefresh();
    });
  }

  #setTimer(name, ms, fn) {
    this.#clearTimer(name);
    this.timers.set(name, setTimeout(() => {
      this.timers.delete(name);
      fn();
    }, ms));
  }

  #clearTimer(name) {
    const id = this.timers.get(name);
    if (id !== undefined) clearTimeout(id);
    this.timers.delete(name);
  }

  #setState(state) {
    this.state = state;
    this.#emitStatus();
  }

  #emitStatus() {
    this.dispatchEvent(new CustomEvent("status", { detail: this.status }));
  }

  #problem(text) {
    this.dispatchEvent(new CustomEvent("problem", { detail: { text, at: Date.now() } }));
  }
}
