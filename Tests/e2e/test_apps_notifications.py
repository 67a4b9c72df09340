"""Notifications per app (issue 14, SPEC AP-1, AP-3, AP-4, AP-6, NO-5; docs/adr/0006-app-routing.md).

Two apps in one Herald, against the provider double: the environment's `default` and `chat`, created
through the admin API with its own catalog, exclusions, default locale and payload root key. The same
user id (`carol`) exists in both and is two users: the choke point, inbox, preferences, members,
presence and delivery records of one app never show the other's, and each app's rules apply to its
own notifications only.
"""
import json
import time
import uuid

import pytest

from conftest import assert_error
from test_apps import (CHAT_SERVER_KEY, CHAT_TOPIC, HTTP, admin, bearer, chat_token, create_chat, herald_apps,  # noqa: F401
                       provider_double, provider_double_module, random_apns_token, register, wait_for)

CHAT_CATALOG = {
    "kind_key": "type",
    "notification_id_key": "notificationId",
    "categories": {"messages": {"android_channel_id": "messages", "name": {"en": "Messages", "pt-BR": "Mensagens"}}},
    "kinds": {
        "message.new": {"category": "messages", "requires": "chat.read",
                        "title": {"en": "New message from {sender}", "pt-BR": "Nova mensagem de {sender}"},
                        "body": {"en": "Open to read it", "pt-BR": "Abra para ler"}},
        "staff.alert": {"category": "messages", "audience": "STAFF", "title": {"en": "Staff", "pt-BR": "Equipe"}},
        "ticket.update": {"category": "messages", "title": {"en": "Ticket updated", "pt-BR": "Chamado atualizado"}},
    },
}


def chat_notify(h, users=None, expect=201, key=CHAT_SERVER_KEY, **body) -> dict:
    body.setdefault("kind", "ticket.update")
    if users is not None:
        body["recipients"] = {"user_ids": users}
    r = HTTP.post(h.url("/v1/notifications"), json=body, headers=bearer(key))
    assert r.status_code == expect, r.text
    return r.json()


def apns_requests(double, token):
    return [e for e in double.requests(provider="apns") if e["path"].endswith("/3/device/" + token) and e["outcome"] is not None]


def deliveries(h, notification_id, key=CHAT_SERVER_KEY):
    return HTTP.get(h.url(f"/v1/notifications/{notification_id}/deliveries"), headers=bearer(key))


def outcome(h, notification_id, device_id):
    record = deliveries(h, notification_id).json()
    return next((t["outcome"] for t in record["targets"] if t.get("device_id") == device_id), None)


@pytest.fixture
def chat(herald_apps, provider_double):
    create_chat(herald_apps, provider_double, catalog=CHAT_CATALOG, exclusions={"audiences": ["staff"], "data_prefixes": [
        {"key": "actionUrl", "prefix": "/staff/"}]})
    return herald_apps


def test_an_apps_notification_follows_its_catalog_locale_root_key_and_credentials(chat, provider_double):
    h = chat
    sid = f"cs-{uuid.uuid4().hex[:8]}"
    chat_apns = random_apns_token()
    provider_double.register_apns_device(chat_apns, topic=CHAT_TOPIC)
    device = register(h, chat_token(sub="carol", sid=sid), "ios", chat_apns)      # no locale: the app's pt-BR
    default_device = register(h, h.token(sub="carol", sid="ds-carol"), "ios", random_apns_token())

    answer = chat_notify(h, ["carol"], kind="ticket.update", data={"ticket": "T-1"})
    [n] = answer["notifications"]
    assert answer["push_queued"] == 1, answer
    [sent] = wait_for(lambda: apns_requests(provider_double, chat_apns), what="chat's push")
    assert sent["headers"]["apns-topic"] == CHAT_TOPIC
    payload = sent["body"]
    assert payload["aps"]["alert"]["title"] == "Chamado atualizado", payload
    # AP-4: the app's data and Herald's own keys under its root key, with its catalog's key names.
    assert payload["respondo"] == {"ticket": "T-1", "type": "ticket.update", "notificationId": n["id"]}, payload
    assert set(payload) == {"aps", "respondo"}, payload
    # The default app's carol is another user: no push, no inbox item, no delivery record.
    assert apns_requests(provider_double, default_device["token"]) == []
    r = HTTP.get(h.url("/v1/me/notifications"), headers=bearer(h.token(sub="carol", sid="ds-carol")))
    assert r.status_code == 200 and r.json()["notifications"] == [], r.text
    assert_error(deliveries(h, n["id"], key=h.env["HERALD_SERVER_KEY"]), 404, "not_found")
    assert deliveries(h, n["id"]).status_code == 200
    # The app's inbox renders with its catalog and default locale.
    r = HTTP.get(h.url("/v1/me/notifications"), headers=bearer(chat_token(sub="carol", sid=sid)))
    [item] = r.json()["notifications"]
    assert (item["id"], item["title"], item["locale"]) == (n["id"], "Chamado atualizado", "pt-BR"), item
    wait_for(lambda: outcome(h, n["id"], device["id"]) == "sent", what="the sent outcome")


def test_the_live_event_goes_on_the_apps_personal_channel_and_suppresses_its_push(chat, provider_double):
    h = chat
    sid = f"cs-{uuid.uuid4().hex[:8]}"
    token = chat_token(sub="carol", sid=sid)
    device = register(h, token, "ios", random_apns_token())
    chat_stream = h.stream(token=token)
    chat_stream.ready()
    default_stream = h.stream(token=h.token(sub="carol", sid=sid))   # same user id and sid, other app
    default_stream.ready()

    answer = chat_notify(h, ["carol"])
    [n] = answer["notifications"]
    assert answer["live_delivered"] == 1 and answer["push_suppressed"] == 1 and answer["push_queued"] == 0, answer
    event = chat_stream.expect("notification.created")
    assert event.json()["channel"] == "user:carol" and event.json()["data"]["id"] == n["id"]
    assert outcome(h, n["id"], device["id"]) == "suppressed_foreground"
    # Nothing on the default app's user:carol: a publish behind it arrives first there.
    h.publish("user:carol", {"marker": 1})
    assert [e.event for e in default_stream.take(1)] == ["update"]


def test_members_permissions_and_idempotency_keys_are_per_app(chat, provider_double):
    h = chat
    default_key = h.env["HERALD_SERVER_KEY"]
    put = lambda key, user, permissions: HTTP.put(h.url(f"/v1/scopes/room:1/members/{user}"), json={"permissions": permissions},
                                                  headers=bearer(key))
    assert put(CHAT_SERVER_KEY, "carol", ["chat.read"]).status_code == 201
    assert put(CHAT_SERVER_KEY, "dan", []).status_code == 201
    assert put(default_key, "erin", ["chat.read"]).status_code == 201
    listed = lambda key: [m["user_id"] for m in HTTP.get(h.url("/v1/scopes/room:1/members"), headers=bearer(key)).json()["members"]]
    assert listed(CHAT_SERVER_KEY) == ["carol", "dan"] and listed(default_key) == ["erin"]
    assert_error(HTTP.delete(h.url("/v1/scopes/room:1/members/erin"), headers=bearer(CHAT_SERVER_KEY)), 404, "not_found")

    # The catalog's `requires` holds for every recipient in the scope, explicit or not (its own catalog's).
    answer = chat_notify(h, None, kind="message.new", scope="room:1", args={"sender": "Ana"},
                         recipients={"user_ids": ["carol", "dan", "erin"]})
    assert sorted(n["user_id"] for n in answer["notifications"]) == ["carol"], answer
    assert sorted((s["user_id"], s["reason"]) for s in answer["skipped_recipients"]) == [
        ("dan", "missing_permission"), ("erin", "not_a_member")], answer
    answer = chat_notify(h, None, kind="message.new", args={"sender": "Ana"}, recipients={"scope": "room:1", "permission": "chat.read"})
    assert [n["user_id"] for n in answer["notifications"]] == ["carol"], answer

    # One idempotency key in two apps is two calls.
    first = chat_notify(h, ["carol"], idempotency_key="order-1")
    r = HTTP.post(h.url("/v1/notifications"), json={"recipients": {"user_ids": ["carol"]}, "kind": "k", "title": "Hi",
                                                     "idempotency_key": "order-1"}, headers=bearer(default_key))
    assert r.status_code == 201, r.text
    assert r.json()["notifications"][0]["id"] != first["notifications"][0]["id"]
    again = HTTP.post(h.url("/v1/notifications"), json={"recipients": {"user_ids": ["carol"]}, "kind": "ticket.update",
                                                         "idempotency_key": "order-1"}, headers=bearer(CHAT_SERVER_KEY))
    assert again.status_code == 200 and again.headers["Idempotent-Replayed"] == "true", again.text
    assert again.json()["notifications"][0]["id"] == first["notifications"][0]["id"]


def test_an_apps_exclusions_and_preferences_apply_to_its_pushes_only(chat, provider_double):
    h = chat
    sid = f"cs-{uuid.uuid4().hex[:8]}"
    token = chat_token(sub="carol", sid=sid)
    device = register(h, token, "ios", random_apns_token())
    default_token = h.token(sub="carol", sid="ds-x")
    default_device = register(h, default_token, "ios", random_apns_token())

    # The catalog's audience STAFF is excluded by the app's `staff` (any case), and so is a staff destination.
    [n] = chat_notify(h, ["carol"], kind="staff.alert")["notifications"]
    assert outcome(h, n["id"], device["id"]) == "skipped_audience"
    [n] = chat_notify(h, ["carol"], data={"actionUrl": "/staff/panel"})["notifications"]
    assert outcome(h, n["id"], device["id"]) == "skipped_audience"
    # The default app has no such exclusion.
    r = HTTP.post(h.url("/v1/notifications"), json={"recipients": {"user_ids": ["carol"]}, "kind": "k", "title": "Hi",
                                                     "audience": "staff", "data": {"actionUrl": "/staff/panel"}},
                  headers=h.server_headers())
    [d] = r.json()["notifications"]
    record = HTTP.get(h.url(f"/v1/notifications/{d['id']}/deliveries"), headers=h.server_headers()).json()
    assert next(t["outcome"] for t in record["targets"] if t.get("device_id") == default_device["id"]) != "skipped_audience"

    # Preferences: chat's carol turns a kind off; the kinds offered are chat's catalog's.
    r = HTTP.put(h.url("/v1/me/push-preferences"), json={"is_enabled": True, "enabled_events": ["message.new"]}, headers=bearer(token))
    assert r.status_code == 200, r.text
    assert r.json()["available_events"] == ["message.new", "ticket.update"], r.text
    assert_error(HTTP.put(h.url("/v1/me/push-preferences"), json={"is_enabled": True, "enabled_events": ["chat.message"]},
                          headers=bearer(token)), 400, "invalid_request", field="enabled_events")
    [n] = chat_notify(h, ["carol"])["notifications"]
    assert outcome(h, n["id"], device["id"]) == "skipped_preferences"
    r = HTTP.get(h.url("/v1/me/push-preferences"), headers=bearer(default_token))
    assert r.json()["is_default"] is True, r.text


def test_presence_reachability_and_read_state_are_per_app(chat, provider_double):
    h = chat
    sid = f"cs-{uuid.uuid4().hex[:8]}"
    token = chat_token(sub="carol", sid=sid, channels=["room:*"])
    stream = h.stream(token=token, channels=["room:1"])
    ready = stream.ready()
    live = HTTP.get(h.url("/v1/users/carol/sessions/live"), headers=bearer(CHAT_SERVER_KEY)).json()
    assert [s["session_id"] for s in live["sessions"]] == [sid] and live["sessions"][0]["user_id"] == "carol", live
    assert live["sessions"][0]["connections"][0]["channels"] == ["room:1", "user:carol"], live
    assert HTTP.get(h.url("/v1/users/carol/sessions/live"), headers=h.server_headers()).json()["sessions"] == []
    room = HTTP.get(h.url("/v1/channels/room:1/presence"), headers=bearer(CHAT_SERVER_KEY)).json()
    assert room["channel"] == "room:1" and room["connections"] == 1 and room["users"][0]["user_id"] == "carol", room
    assert HTTP.get(h.url("/v1/channels/room:1/presence"), headers=h.server_headers()).json()["connections"] == 0
    reach = HTTP.get(h.url("/v1/users/carol/reachability"), headers=bearer(CHAT_SERVER_KEY)).json()
    assert reach["reachability"] == "live_foreground", reach
    assert HTTP.get(h.url("/v1/users/carol/reachability"), headers=h.server_headers()).json()["reachability"] == "unreachable"
    # The state a session reports is its app's user's.
    r = HTTP.put(h.url("/v1/me/sessions/current/state"), json={"state": "background"}, headers=bearer(token))
    assert r.json()["connections"] == 1, r.text
    assert HTTP.get(h.url("/v1/users/carol/reachability"), headers=bearer(CHAT_SERVER_KEY)).json()["reachability"] == "live_background"

    # Reading marks the app's item and tells the app's sessions.
    [n] = chat_notify(h, ["carol"])["notifications"]
    stream.expect("notification.created")
    r = HTTP.post(h.url(f"/v1/me/notifications/{n['id']}/read"), headers=bearer(token))
    assert r.status_code == 200 and r.json()["unread_count"] == 0, r.text
    read = stream.expect("notification.read")
    assert read.json()["data"]["ids"] == [n["id"]]
    assert_error(HTTP.post(h.url(f"/v1/me/notifications/{n['id']}/read"), headers=bearer(h.token(sub="carol"))), 404, "not_found")
    assert ready["user_id"] == "carol"


def test_an_apps_rules_change_without_a_restart_and_bad_ones_change_nothing(chat, provider_double):
    h = chat
    # A default locale the catalog has no texts for is refused, naming the field; nothing changes.
    r = HTTP.patch(h.url("/v1/apps/chat"), json={"default_locale": "ja"}, headers={"Authorization": "Bearer e2e-admin-key-0123456789"})
    assert_error(r, 400, "invalid_request", field="default_locale")
    r = HTTP.patch(h.url("/v1/apps/chat"), json={"payload": {"root_key": "aps"}}, headers={"Authorization": "Bearer e2e-admin-key-0123456789"})
    assert_error(r, 400, "invalid_request", field="payload.root_key")
    sid = f"cs-{uuid.uuid4().hex[:8]}"
    token = chat_token(sub="carol", sid=sid)
    r = HTTP.get(h.url("/v1/me/notifications"), headers=bearer(token))
    chat_notify(h, ["carol"])
    [item] = HTTP.get(h.url("/v1/me/notifications"), headers=bearer(token)).json()["notifications"]
    assert item["title"] == "Chamado atualizado"
    # English by default from now on: the same stored notification renders in the new default.
    r = HTTP.patch(h.url("/v1/apps/chat"), json={"default_locale": "en"}, headers={"Authorization": "Bearer e2e-admin-key-0123456789"})
    assert r.status_code == 200, r.text
    [item] = HTTP.get(h.url("/v1/me/notifications"), headers=bearer(token)).json()["notifications"]
    assert item["title"] == "Ticket updated", item
    # A kind the catalog no longer has is refused for that app only.
    r = HTTP.patch(h.url("/v1/apps/chat"), json={"catalog": None}, headers={"Authorization": "Bearer e2e-admin-key-0123456789"})
    assert r.status_code == 200, r.text
    assert_error(HTTP.post(h.url("/v1/notifications"), json={"recipients": {"user_ids": ["carol"]}, "kind": "ticket.update"},
                           headers=bearer(CHAT_SERVER_KEY)), 400, "invalid_request")


def test_an_inbox_item_whose_kind_left_the_catalog_keeps_a_title(herald_apps, provider_double):
    h = herald_apps
    create_chat(h, provider_double, catalog=CHAT_CATALOG)
    chat_notify(h, ["carol"], kind="ticket.update")
    chat_notify(h, ["carol"], kind="message.new", title={"en": "Own text", "pt-BR": "Texto próprio"})
    kinds = {k: v for k, v in CHAT_CATALOG["kinds"].items() if k not in ("ticket.update", "message.new")}
    r = HTTP.patch(h.url("/v1/apps/chat"), json={"catalog": {**CHAT_CATALOG, "kinds": kinds}}, headers=admin())
    assert r.status_code == 200, r.text
    r = HTTP.get(h.url("/v1/me/notifications"), params={"locale": "en"}, headers=bearer(chat_token(sub="carol", sid="cs-inbox")))
    assert r.status_code == 200, r.text
    items = {n["kind"]: n for n in r.json()["notifications"]}
    # Nothing renders any more: titled by its kind, not null.
    gone = items["ticket.update"]
    assert (gone["title"], gone["body"], gone["locale"]) == ("ticket.update", None, None), gone
    # The call's own texts still render without the kind.
    assert items["message.new"]["title"] == "Own text", items["message.new"]
