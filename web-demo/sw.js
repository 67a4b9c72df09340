// The demo's service worker: shows Web Push notifications.
//
// A real push (a browser with a push service, subscribed with Herald's VAPID key) arrives as a
// `push` event whose data the browser has already decrypted. In the local push demo
// (HERALD_DEMO_PUSH=1) the subscription is simulated: the page decrypts what the provider double
// received, with WebCrypto, and hands the payload over as a message. Both end in `show`.
"use strict";

/** Herald's Web Push payload (docs/clients.md): {kind, title, body, tag, data, push_id, …}. */
function show(payload) {
  if (payload.kind === "wakeup") return Promise.resolve(null);   // a wake-up has nothing to show
  const title = payload.title || "Herald";
  const options = {
    body: [payload.subtitle, payload.body].filter(Boolean).join("\n"),
    tag: payload.tag || payload.push_id,
    data: { ...(payload.data || {}), push_id: payload.push_id },
  };
  return self.registration.showNotification(title, options).then(() => ({ title, tag: options.tag }));
}

self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));

self.addEventListener("push", (event) => {
  let payload;
  try {
    payload = event.data ? event.data.json() : {};
  } catch (error) {
    payload = { title: "Herald", body: event.data ? event.data.text() : "" };
  }
  event.waitUntil(show(payload));
});

self.addEventListener("message", (event) => {
  if (!event.data || event.data.type !== "show-push") return;
  event.waitUntil(show(event.data.payload).then(
    (shown) => event.source && event.source.postMessage({ type: "push-shown", seq: event.data.seq, shown }),
    (error) => event.source && event.source.postMessage({ type: "push-shown", seq: event.data.seq, error: String(error) })));
});

self.addEventListener("notificationclick", (event) => {
  event.notification.close();
  event.waitUntil(self.clients.matchAll({ type: "window", includeUncontrolled: true }).then((windows) =>
    windows.length ? windows[0].focus() : self.clients.openWindow("/")));
});
