"""Notifications end to end (issue 6, SPEC NO-1…NO-7): the choke point `POST /v1/notifications`,
the inbox over GET and its live invalidation events, `Herald-Cursor` resume, push preferences,
scope members and recipient rules, idempotency, and the catalog's push payloads (seed 001).

Everything is observed from outside: the HTTP API, the SSE stream of the recipient, the delivery
record (`GET /v1/notifications/{id}/deliveries`) and what the provider double received. One Herald
(merchant catalog, pointed at one provider double) serves the module; every test uses its own
users, stores and device tokens, so the tests do not see each other. Waits poll with bounds.
"""
import re
import sys
import time
import uuid
from datetime import datetime
from pathlib import Path

import httpx
import pytest

from conftest import ROOT, assert_error, envelope

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ProviderDouble"))
from fixture import provider_double, provider_double_module, random_apns_token  # noqa: E402,F401

CATALOG = ROOT / "examples" / "catalogs" / "merchant.json"
RFC3339_MS = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
ORDER_KINDS = ["orders.cancelled", "orders.created", "orders.paid"]
CONVERSATION_KINDS = ["conversations.assigned", "conversations.handed_over", "conversations.message_received",
                      "conversations.started"]
ALL_PERMISSIONS = ["conversations.read", "inventory.read", "orders.read"]

# One client for the module: a new httpx client per request costs tens of ms.
HTTP = httpx.Client(timeout=10)


@pytest.fixture(scope="module", autouse=True)
def _close_client():
    yield
    HTTP.close()


@pytest.fixture
def h(shared_herald_factory, provider_double_module):
    """The module's Herald: merchant catalog, APNs and FCM pointed at the module's double."""
    return shared_herald_factory(**provider_double_module.herald_env(), HERALD_CATALOG_PATH=CATALOG)


# --- helpers ---------------------------------------------------------------------------------


def uid(prefix="u") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def auth(access) -> dict:
    return {"Authorization": f"Bearer {access}"}


def user_token(h, user) -> str:
    return h.token(sub=user, sid=uid("s"))


def send(h, body, expect=201) -> httpx.Response:
    """POST /v1/notifications; a str body is sent as raw JSON text (e.g. with a duplicate key)."""
    if isinstance(body, str):
        r = HTTP.post(h.url("/v1/notifications"), content=body,
                      headers={**h.server_headers(), "Content-Type": "application/json"})
    else:
        r = HTTP.post(h.url("/v1/notifications"), json=body, headers=h.server_headers())
    assert r.status_code == expect, r.text
    return r


def notify(h, user, expect=201, **fields) -> dict:
    """One notification to `user` (texts of an unknown kind unless `fields` say otherwise)."""
    body = {"recipients": {"user_ids": [user]}, "kind": "news.post", "title": "Hello", "body": "There"}
    body.update(fields)
    return send(h, body, expect).json()


def inbox(h, access, **params) -> httpx.Response:
    r = HTTP.get(h.url("/v1/me/notifications"), params=params, headers=auth(access))
    assert r.status_code == 200, r.text
    return r


def inbox_ids(h, access, **params) -> list:
    """Every id of the inbox, newest first, across pages."""
    ids, cursor = [], None
    while True:
        query = dict(params, limit=100)
        if cursor:
            query["cursor"] = cursor
        body = inbox(h, access, **query).json()
        ids += [n["id"] for n in body["notifications"]]
        cursor = body["next_cursor"]
        if cursor is None:
            return ids


def unread_count(h, access) -> int:
    r = HTTP.get(h.url("/v1/me/notifications/unread-count"), headers=auth(access))
    assert r.status_code == 200, r.text
    return r.json()["unread_count"]


def mark_read(h, access, nid) -> httpx.Response:
    return HTTP.post(h.url(f"/v1/me/notifications/{nid}/read"), headers=auth(access))


def put_member(h, scope, user, permissions, expect=None) -> httpx.Response:
    r = HTTP.put(h.url(f"/v1/scopes/{scope}/members/{user}"), json={"permissions": permissions},
                 headers=h.server_headers())
    if expect is not None:
        assert r.status_code == expect, r.text
    return r


def prefs_url(scope=None, store=None) -> str:
    if store is not None:
        return f"/v1/stores/{store}/me/push-preferences"
    if scope is not None:
        return f"/v1/scopes/{scope}/me/push-preferences"
    return "/v1/me/push-preferences"


def get_prefs(h, access, **where) -> dict:
    r = HTTP.get(h.url(prefs_url(**where)), headers=auth(access))
    assert r.status_code == 200, r.text
    return r.json()


def put_prefs(h, access, body, expect=200, **where) -> httpx.Response:
    r = HTTP.put(h.url(prefs_url(**where)), json=body, headers=auth(access))
    assert r.status_code == expect, r.text
    return r


def deliveries(h, nid) -> dict:
    r = HTTP.get(h.url(f"/v1/notifications/{nid}/deliveries"), headers=h.server_headers())
    assert r.status_code == 200, r.text
    return r.json()


def outcomes(h, nid) -> list:
    return [d["outcome"] for d in deliveries(h, nid)["deliveries"]]


def differences(got, expected, path="") -> list:
    """Where two JSON values differ, as `path: got …, expected …` lines."""
    if isinstance(got, dict) and isinstance(expected, dict):
        out = []
        for key in sorted(set(got) | set(expected)):
            where = f"{path}.{key}" if path else key
            if key not in got:
                out.append(f"{where}: missing, expected {expected[key]!r}")
            elif key not in expected:
                out.append(f"{where}: {got[key]!r}, expected no such key")
            else:
                out += differences(got[key], expected[key], where)
        return out
    return [] if got == expected else [f"{path}: {got!r}, expected {expected!r}"]


def ts(value: str) -> float:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


class Device:
    """A device registered by its own session of `user` (one session per device: a session
    keeps one device per platform)."""

    def __init__(self, h, user, platform, locale=None):
        self.user, self.platform, self.locale = user, platform, locale
        self.token = random_apns_token() if platform == "ios" else \
            f"f{uuid.uuid4().hex[:12]}:APA91bHPRgkF3JUikC4ENAHEeMrd41Zxv3hVZjC9KtT8OvPVGJ-hQMRKRrZuJAEcl7_B338q"
        self.access = user_token(h, user)
        body = {"platform": platform, "token": self.token}
        if locale:
            body["locale"] = locale
        r = HTTP.post(h.url("/v1/me/devices"), json=body, headers=auth(self.access))
        assert r.status_code == 201, r.text
        self.id = r.json()["id"]


def pushes_to(double, device: Device) -> list:
    """Answered requests the double got for `device`, in arrival order."""
    if device.platform == "ios":
        return [e for e in double.requests("apns")
                if e["path"].endswith("/3/device/" + device.token) and e["outcome"] is not None]
    return [e for e in double.requests("fcm")
            if ((e.get("body") or {}).get("message") or {}).get("token") == device.token and e["outcome"] is not None]


def wait_pushes(double, device: Device, count, timeout=10.0) -> list:
    deadline = time.monotonic() + timeout
    while True:
        got = pushes_to(double, device)
        if len(got) >= count or time.monotonic() > deadline:
            assert len(got) >= count, f"{len(got)} of {count} pushes to the {device.platform} device: {got}"
            return got
        time.sleep(0.02)


def wait_outcome(h, nid, outcome, timeout=10.0) -> list:
    deadline = time.monotonic() + timeout
    while True:
        got = outcomes(h, nid)
        if outcome in got or time.monotonic() > deadline:
            assert outcome in got, f"no {outcome} for {nid} within {timeout}s: {got}"
            return got
        time.sleep(0.02)


# --- inbox -----------------------------------------------------------------------------------


def test_inbox_pages_newest_first_with_no_duplicates_or_skips(h):
    user = uid()
    access = user_token(h, user)
    sent = []
    for n in range(25):
        answer = notify(h, user, title=f"Title {n}", body=f"Body {n}", data={"n": str(n)})
        [one] = answer["notifications"]
        assert one["user_id"] == user and one["event_id"], answer
        sent.append(one)
    newest_first = [s["id"] for s in reversed(sent)]

    pages, cursor = [], None
    for _ in range(4):
        params = {"limit": 10}
        if cursor:
            params["cursor"] = cursor
        body = inbox(h, access, **params).json()
        pages.append(body["notifications"])
        cursor = body["next_cursor"]
        if cursor is None:
            break
        assert isinstance(cursor, str) and cursor, body["next_cursor"]
    assert [len(p) for p in pages] == [10, 10, 5], [len(p) for p in pages]
    assert cursor is None
    listed = [n["id"] for p in pages for n in p]
    assert listed == newest_first, "pages must be newest first, no duplicate, no gap"

    # One item, field by field (the oldest: n = 0).
    item = pages[-1][-1]
    assert set(item) == {"id", "kind", "scope", "title", "subtitle", "body", "locale", "data", "priority", "read",
                         "read_at", "event_id", "created_at"}, item
    assert item["id"] == sent[0]["id"] and item["event_id"] == sent[0]["event_id"], (item, sent[0])
    assert (item["kind"], item["scope"], item["title"], item["subtitle"], item["body"]) == \
        ("news.post", None, "Title 0", None, "Body 0"), item
    assert item["data"] == {"n": "0"} and item["priority"] == "normal", item
    assert item["read"] is False and item["read_at"] is None, item
    assert RFC3339_MS.match(item["created_at"]) and abs(ts(item["created_at"]) - time.time()) < 60, item
    assert [n["data"]["n"] for n in pages[0]] == [str(n) for n in range(24, 14, -1)]
    assert unread_count(h, access) == 25


def test_unread_filter_mark_read_and_read_all(h):
    user, other = uid(), uid()
    access, other_access = user_token(h, user), user_token(h, other)
    ids = [notify(h, user, body=f"n{n}")["notifications"][0]["id"] for n in range(5)]
    hidden = notify(h, user, body="push only", persist=False)["notifications"][0]["id"]
    other_id = notify(h, other)["notifications"][0]["id"]

    # persist:false: stored for the push, but neither listed nor counted.
    assert inbox_ids(h, access) == ids[::-1]
    assert hidden not in inbox_ids(h, access, unread="true")
    assert unread_count(h, access) == 5

    r = mark_read(h, access, ids[1])
    assert r.status_code == 200, r.text
    first = r.json()
    assert set(first) == {"id", "read_at", "unread_count"}, first
    assert first["id"] == ids[1] and first["unread_count"] == 4, first
    assert RFC3339_MS.match(first["read_at"]) and abs(ts(first["read_at"]) - time.time()) < 60, first
    assert unread_count(h, access) == 4
    assert inbox_ids(h, access, unread="true") == [i for i in ids[::-1] if i != ids[1]]
    assert inbox_ids(h, access, unread="false") == ids[::-1]
    [listed] = [n for n in inbox(h, access).json()["notifications"] if n["id"] == ids[1]]
    assert listed["read"] is True and listed["read_at"] == first["read_at"], listed

    # A second mark keeps the first time.
    r = mark_read(h, access, ids[1])
    assert r.status_code == 200 and r.json() == first, r.text

    # Another user's notification and an unknown id: 404, and nothing changes for the owner.
    assert_error(mark_read(h, access, other_id), 404, "not_found")
    assert_error(mark_read(h, other_access, ids[0]), 404, "not_found")
    assert_error(mark_read(h, access, "ntf_doesnotexist00000000"), 404, "not_found")
    assert unread_count(h, other_access) == 1 and unread_count(h, access) == 4

    r = HTTP.post(h.url("/v1/me/notifications/read-all"), headers=auth(access))
    assert r.status_code == 200 and r.json() == {"marked": 4, "unread_count": 0}, r.text
    assert unread_count(h, access) == 0
    assert inbox_ids(h, access, unread="true") == []
    assert all(n["read"] and n["read_at"] for n in inbox(h, access).json()["notifications"])
    assert unread_count(h, other_access) == 1, "read-all is per user"
    r = HTTP.post(h.url("/v1/me/notifications/read-all"), headers=auth(access))
    assert r.status_code == 200 and r.json() == {"marked": 0, "unread_count": 0}, r.text


def test_inbox_query_is_checked(h):
    access = user_token(h, uid())
    for params, field in [({"limit": 0}, "limit"), ({"limit": 101}, "limit"), ({"cursor": "abc"}, "cursor"),
                          ({"unread": "yes"}, "unread"), ({"locale": "not a locale"}, "locale")]:
        r = HTTP.get(h.url("/v1/me/notifications"), params=params, headers=auth(access))
        assert_error(r, 400, "invalid_request", field)
    assert HTTP.get(h.url("/v1/me/notifications")).status_code == 401
    assert HTTP.get(h.url("/v1/me/notifications"), headers=h.server_headers()).status_code == 401


def test_inbox_texts_follow_locale_query_then_accept_language_then_catalog_default(h):
    user = uid()
    access = user_token(h, user)
    put_member(h, "store:s1", user, ["orders.read"], expect=201)   # orders.paid needs it (NO-6)
    notify(h, user, kind="orders.paid", title=None, body=None, scope="store:s1",
           args={"order_number": "7", "total": "R$ 1,00", "customer_name": "Ana", "store_name": "Loja"},
           data={"store_id": "s1", "order_id": "o7"})

    def first(**kw):
        r = HTTP.get(h.url("/v1/me/notifications"), **kw)
        assert r.status_code == 200, r.text
        return r.json()["notifications"][0]

    item = first(params={"locale": "en-US"}, headers=auth(access))
    assert (item["title"], item["subtitle"], item["body"], item["locale"]) == ("Order #7 paid", "Loja", "R$ 1,00 · Ana", "en"), item
    assert (item["scope"], item["priority"]) == ("store:s1", "high"), item
    item = first(headers={**auth(access), "Accept-Language": "es-ES,es;q=0.9"})
    assert (item["title"], item["locale"]) == ("Pedido #7 pagado", "es"), item
    item = first(headers=auth(access))
    assert (item["title"], item["locale"]) == ("Pedido #7 pago", "pt"), item
    item = first(params={"locale": "fr-FR"}, headers=auth(access))
    assert (item["title"], item["locale"]) == ("Pedido #7 pago", "pt"), item


def test_accept_language_is_read_by_weight_then_the_users_language_before_the_default(h):
    """RFC 9110 §12.5.4: the tags by `q` (ties in order, `q=0` and `*` left out), each text in the
    first language it has; none of them: the user's language, then the catalog's default."""
    user = uid()
    access = user_token(h, user)
    notify(h, user, title={"pt": "Olá", "en": "Hi", "es": "Hola"}, body="b")

    def shown(accept, **params):
        r = HTTP.get(h.url("/v1/me/notifications"), params=params, headers={**auth(access), "Accept-Language": accept})
        assert r.status_code == 200, r.text
        item = r.json()["notifications"][0]
        return item["title"], item["locale"]

    assert shown("de-DE,de;q=0.9,en;q=0.8") == ("Hi", "en")           # German has no text: English, not the default
    assert shown("en;q=0.2, es;q=0.9, pt;q=0.5") == ("Hola", "es")     # by weight, not by order
    assert shown("es;q=0.5, en;q=0.5") == ("Hola", "es")               # a tie keeps the order given
    assert shown("es;q=0, *, en") == ("Hi", "en")                      # q=0 is "not this one"; * names none
    assert shown("x_1, en-US;q=abc, es;q=0.3") == ("Hola", "es")       # malformed elements are skipped
    assert shown("de") == ("Olá", "pt")                               # nothing matches, no user language: the default
    assert HTTP.put(h.url(f"/v1/users/{user}"), json={"locale": "es-MX"}, headers=h.server_headers()).status_code == 201
    assert shown("de") == ("Hola", "es")                              # then the user's language, before the default
    assert shown("de", locale="fr") == ("Hola", "es")                 # ?locale= too falls back to it
    assert shown("de", locale="en") == ("Hi", "en")                   # ?locale= wins over Accept-Language


def test_text_locales_and_the_locale_query_are_tags_by_the_devices_rule(h):
    """A title/body map's keys and `?locale=` follow RFC 5646 as a device's `locale` does: `_` is
    read as `-`, case is normalised, subtags out of order are refused."""
    user = uid()
    access = user_token(h, user)
    notify(h, user, title={"pt_br": "Olá", "EN": "Hi"}, body={"pt_br": "Tudo bem", "EN": "All good"})
    for locale, title in [("pt-BR", "Olá"), ("pt_br", "Olá"), ("pt", "Olá"), ("en-US", "Hi"), ("en", "Hi")]:
        item = inbox(h, access, locale=locale).json()["notifications"][0]
        assert item["title"] == title, (locale, item)
    for title in [{"pt-br": "a", "pt_BR": "b"}, {"xx-YY-ZZ": "t"}, {"12": "t"}, {"en-": "t"}, {"en-US-": "t"}]:
        r = send(h, {"recipients": {"user_ids": [user]}, "kind": "news.post", "title": title}, 400)
        assert_error(r, 400, "invalid_request", "title")
    for locale in ["12", "xx-YY-ZZ", "en_", "e"]:
        r = HTTP.get(h.url("/v1/me/notifications"), params={"locale": locale}, headers=auth(access))
        assert_error(r, 400, "invalid_request", "locale")
    assert len(inbox(h, access).json()["notifications"]) == 1   # the refused calls stored nothing


# --- live events -----------------------------------------------------------------------------


def test_stream_gets_created_and_read_events(h):
    user = uid()
    access = user_token(h, user)
    stream = h.stream(token=access)
    stream.ready()
    answers = [notify(h, user, body=f"n{n}", scope="store:live")["notifications"][0] for n in range(3)]
    for answer in answers:
        event = stream.expect("notification.created")
        body = envelope(event)
        assert body["channel"] == f"user:{user}", body
        assert body["data"] == {"id": answer["id"], "kind": "news.post", "scope": "store:live"}, body
        assert event.id == answer["event_id"], (event, answer)

    assert mark_read(h, access, answers[0]["id"]).status_code == 200
    event = stream.expect("notification.read")
    assert envelope(event)["data"] == {"ids": [answers[0]["id"]], "unread_count": 2}, event

    # Marking again broadcasts nothing: the next event is the next notification.
    assert mark_read(h, access, answers[0]["id"]).status_code == 200
    later = notify(h, user, body="later")["notifications"][0]
    event = stream.expect("notification.created")
    assert envelope(event)["data"]["id"] == later["id"], event

    r = HTTP.post(h.url("/v1/me/notifications/read-all"), headers=auth(access))
    assert r.json()["marked"] == 3, r.text
    event = stream.expect("notification.read")
    assert envelope(event)["data"] == {"all": True, "unread_count": 0}, event

    # read-all with nothing to mark broadcasts nothing either.
    HTTP.post(h.url("/v1/me/notifications/read-all"), headers=auth(access))
    last = notify(h, user, body="last")["notifications"][0]
    assert envelope(stream.expect("notification.created"))["data"]["id"] == last["id"]


def test_herald_cursor_resumes_the_stream_after_the_read(h):
    user = uid()
    access = user_token(h, user)
    before = notify(h, user, body="before")["notifications"][0]
    r = inbox(h, access)
    cursor = r.headers.get("Herald-Cursor")
    assert cursor, r.headers
    assert [n["id"] for n in r.json()["notifications"]] == [before["id"]]
    r = HTTP.get(h.url("/v1/me/notifications/unread-count"), headers=auth(access))
    assert r.headers.get("Herald-Cursor"), r.headers

    after = notify(h, user, body="after")["notifications"][0]
    stream = h.stream(token=access, last_event_id=cursor)
    stream.ready()
    event = stream.expect("notification.created")
    assert envelope(event)["data"]["id"] == after["id"], f"expected only the one created after the GET, got {event}"
    assert event.id == after["event_id"]
    # Then live, with nothing in between.
    live = notify(h, user, body="live")["notifications"][0]
    event = stream.expect("notification.created")
    assert envelope(event)["data"]["id"] == live["id"], event


# --- preferences -----------------------------------------------------------------------------


def test_preferences_default_and_available_events_follow_permissions(h):
    store, user = uid("st"), uid()
    access = user_token(h, user)
    scope = f"store:{store}"
    put_member(h, scope, user, ALL_PERMISSIONS, expect=201)
    prefs = get_prefs(h, access, store=store)
    assert prefs == {
        "scope": scope, "is_enabled": True, "is_default": True,
        "enabled_events": sorted(CONVERSATION_KINDS + ORDER_KINDS),
        "available_events": sorted(CONVERSATION_KINDS + ORDER_KINDS + ["inventory.low_stock"]),
    }, prefs
    assert get_prefs(h, access, scope=scope) == prefs

    put_member(h, scope, user, ["orders.read"], expect=200)
    prefs = get_prefs(h, access, store=store)
    assert prefs["available_events"] == ORDER_KINDS, prefs
    assert prefs["enabled_events"] == ORDER_KINDS and prefs["is_default"] is True, prefs

    # Not a member: nothing to choose (every merchant kind requires a permission).
    prefs = get_prefs(h, access, store=uid("st"))
    assert prefs["available_events"] == [] and prefs["enabled_events"] == [], prefs


def test_preferences_put_saves_and_unknown_kind_saves_nothing(h):
    store, user = uid("st"), uid()
    access = user_token(h, user)
    scope = f"store:{store}"
    put_member(h, scope, user, ALL_PERMISSIONS, expect=201)

    # An unknown kind on a scope with nothing saved: 400, still the default.
    r = HTTP.put(h.url(prefs_url(store=store)), json={"is_enabled": True, "enabled_events": ["orders.paid", "orders.refunded"]},
                 headers=auth(access))
    assert_error(r, 400, "invalid_request", "enabled_events")
    assert get_prefs(h, access, store=store)["is_default"] is True

    saved = put_prefs(h, access, {"is_enabled": True, "enabled_events": ["orders.paid", "inventory.low_stock", "orders.paid"]},
                      store=store).json()
    assert saved["scope"] == scope and saved["is_enabled"] is True and saved["is_default"] is False, saved
    assert saved["enabled_events"] == ["inventory.low_stock", "orders.paid"], saved
    assert get_prefs(h, access, store=store) == saved
    assert get_prefs(h, access, scope=scope) == saved, "the store alias is scope store:{id}"

    # An unknown kind later: 400 and the saved list stays.
    r = HTTP.put(h.url(prefs_url(scope=scope)), json={"is_enabled": False, "enabled_events": ["nope.kind"]},
                 headers=auth(access))
    assert_error(r, 400, "invalid_request", "enabled_events")
    assert get_prefs(h, access, store=store) == saved
    r = HTTP.put(h.url(prefs_url(scope=scope)), json={"enabled_events": []}, headers=auth(access))
    assert_error(r, 400, "invalid_request", "is_enabled")

    # Other users and other scopes are untouched.
    assert get_prefs(h, user_token(h, uid()), store=store)["is_default"] is True
    assert get_prefs(h, access, store=uid("st"))["is_default"] is True


def test_global_push_preferences(h):
    user = uid()
    access = user_token(h, user)
    prefs = get_prefs(h, access)
    assert prefs["scope"] is None and prefs["is_enabled"] is True and prefs["is_default"] is True, prefs
    assert set(CONVERSATION_KINDS + ORDER_KINDS + ["inventory.low_stock"]) <= set(prefs["available_events"]), prefs
    assert "inventory.low_stock" not in prefs["enabled_events"], prefs
    saved = put_prefs(h, access, {"is_enabled": False}).json()
    assert saved["scope"] is None and saved["is_enabled"] is False and saved["is_default"] is False, saved
    assert get_prefs(h, access) == saved
    # The global switch is not a scope's preference.
    assert get_prefs(h, access, store=uid("st"))["is_default"] is True


def test_global_available_events_leave_out_kinds_preferences_do_not_govern(h):
    """The catalog's `test` kind has `preferences: false` ("not listed in push preferences");
    the global list must leave it out as the scoped lists do."""
    prefs = get_prefs(h, user_token(h, uid()))
    assert "test" not in prefs["available_events"], prefs
    assert "test" not in prefs["enabled_events"], prefs


# --- preferences decide pushes ---------------------------------------------------------------


def order_paid(store, order, **extra) -> dict:
    return {"kind": "orders.paid", "scope": f"store:{store}",
            "args": {"order_number": "1042", "total": "R$ 1.234,56", "customer_name": "Ana Souza", "store_name": "Loja Azul"},
            "data": {"store_id": store, "order_id": order}, **extra}


def low_stock(store, variant, **extra) -> dict:
    return {"kind": "inventory.low_stock", "scope": f"store:{store}",
            "args": {"product_name": "Camiseta", "variant_name": "M / Azul", "quantity": "2", "location_name": "Loja Centro",
                     "store_name": "Loja Azul"},
            "data": {"store_id": store, "product_id": "p-1", "variant_id": variant}, **extra}


def message_received(store, conversation, **extra) -> dict:
    return {"kind": "conversations.message_received", "scope": f"store:{store}",
            "args": {"customer_name": "Ana Souza", "message": "Oi, tudo bem?", "store_name": "Loja Azul"},
            "data": {"store_id": store, "conversation_id": conversation}, **extra}


def to_user(user, call) -> dict:
    return {"recipients": {"user_ids": [user]}, **call}


def test_preferences_decide_pushes(h, provider_double):
    double = provider_double
    store, user = uid("st"), uid()
    put_member(h, f"store:{store}", user, ALL_PERMISSIONS, expect=201)
    phone = Device(h, user, "ios")
    access = phone.access
    pushed = 0

    def expect_push(call, marker):
        nonlocal pushed
        answer = send(h, to_user(user, call)).json()
        assert answer["push_queued"] == 1 and answer["skipped"] == 0, answer
        pushed += 1
        entry = wait_pushes(double, phone, pushed)[-1]
        assert entry["status"] == 200 and marker.items() <= entry["body"].items(), entry["body"]
        wait_outcome(h, answer["notifications"][0]["id"], "sent")

    def expect_skip(call):
        answer = send(h, to_user(user, call)).json()
        assert answer["push_queued"] == 0 and answer["skipped"] == 1, answer
        nid = answer["notifications"][0]["id"]
        record = deliveries(h, nid)
        assert [d["outcome"] for d in record["deliveries"]] == ["skipped_preferences"], record
        assert record["deliveries"][0]["device_id"] == phone.id, record
        assert nid in inbox_ids(h, access), "a push turned off still reaches the inbox"

    # Defaults: orders on, low stock off.
    expect_push(order_paid(store, "o-1"), {"order_id": "o-1"})
    expect_skip(low_stock(store, "v-1"))
    # A saved list that enables low stock (and leaves orders out).
    put_prefs(h, access, {"is_enabled": True, "enabled_events": ["inventory.low_stock"]}, store=store)
    expect_push(low_stock(store, "v-2"), {"variant_id": "v-2"})
    expect_skip(order_paid(store, "o-2"))
    # The store switched off: nothing, whatever the list says.
    put_prefs(h, access, {"is_enabled": False, "enabled_events": ["inventory.low_stock", "orders.paid"]}, store=store)
    expect_skip(low_stock(store, "v-3"))
    expect_skip(order_paid(store, "o-3"))
    # Another store keeps its defaults.
    other = uid("st")
    put_member(h, f"store:{other}", user, ALL_PERMISSIONS, expect=201)
    expect_push(order_paid(other, "o-4"), {"order_id": "o-4"})
    # The global switch off silences a store that has the kind on.
    put_prefs(h, access, {"is_enabled": True, "enabled_events": ["orders.paid"]}, store=store)
    put_prefs(h, access, {"is_enabled": False})
    expect_skip(order_paid(store, "o-5"))
    expect_skip(order_paid(other, "o-6"))
    expect_skip(to_user(user, {"kind": "news.post", "body": "no scope"}))
    put_prefs(h, access, {"is_enabled": True})
    expect_push(order_paid(store, "o-7"), {"order_id": "o-7"})
    assert len(pushes_to(double, phone)) == pushed == 4


# --- members and recipient rules -------------------------------------------------------------


def test_members_put_list_delete(h):
    scope = uid("team")
    users = sorted(uid() for _ in range(5))
    r = put_member(h, scope, users[0], ["orders.read", "conversations.read", "orders.read"], expect=201)
    member = r.json()
    assert set(member) == {"scope", "user_id", "permissions", "updated_at"}, member
    assert member["scope"] == scope and member["user_id"] == users[0], member
    assert member["permissions"] == ["conversations.read", "orders.read"], member
    assert RFC3339_MS.match(member["updated_at"]), member
    r = put_member(h, scope, users[0], ["orders.read"], expect=200)
    assert r.json()["permissions"] == ["orders.read"], r.text
    for user in users[1:]:
        put_member(h, scope, user, [], expect=201)

    pages, cursor = [], None
    for _ in range(4):
        params = {"limit": 2}
        if cursor:
            params["cursor"] = cursor
        r = HTTP.get(h.url(f"/v1/scopes/{scope}/members"), params=params, headers=h.server_headers())
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["scope"] == scope, body
        pages.append([m["user_id"] for m in body["members"]])
        cursor = body["next_cursor"]
        if cursor is None:
            break
    assert pages == [users[0:2], users[2:4], users[4:5]], pages
    r = HTTP.get(h.url(f"/v1/scopes/{scope}/members"), headers=h.server_headers())
    assert [m["permissions"] for m in r.json()["members"]][:2] == [["orders.read"], []], r.text

    r = HTTP.delete(h.url(f"/v1/scopes/{scope}/members/{users[1]}"), headers=h.server_headers())
    assert r.status_code == 204 and r.content == b"", r.text
    assert_error(HTTP.delete(h.url(f"/v1/scopes/{scope}/members/{users[1]}"), headers=h.server_headers()), 404, "not_found")
    r = HTTP.get(h.url(f"/v1/scopes/{scope}/members"), headers=h.server_headers())
    assert [m["user_id"] for m in r.json()["members"]] == [users[0]] + users[2:], r.text

    assert_error(put_member(h, scope, "bad!user", ["orders.read"]), 400, "invalid_request", "user_id")
    assert_error(put_member(h, scope, users[0], ["orders read"]), 400, "invalid_request", "permissions")
    assert_error(put_member(h, scope, users[0], ["x"] * 201), 400, "invalid_request", "permissions")
    assert_error(HTTP.put(h.url(f"/v1/scopes/{scope}/members/{users[0]}"), json={}, headers=h.server_headers()),
                 400, "invalid_request", "permissions")
    assert_error(HTTP.get(h.url(f"/v1/scopes/{scope}/members"), params={"limit": 0}, headers=h.server_headers()),
                 400, "invalid_request", "limit")
    # A cursor is a previous page's next_cursor, a user id: anything else is refused like the
    # inbox's and the jobs' cursors, not read as "after this text" (an empty or wrong page).
    for cursor in ("", "a b", "bad!user", "x" * 196):
        assert_error(HTTP.get(h.url(f"/v1/scopes/{scope}/members"), params={"cursor": cursor}, headers=h.server_headers()),
                     400, "invalid_request", "cursor")
    r = HTTP.get(h.url(f"/v1/scopes/{scope}/members"), headers=auth(user_token(h, users[0])))
    assert r.status_code == 401, r.text
    r = HTTP.get(h.url(f"/v1/scopes/{scope}/members"), headers=h.server_headers())
    assert r.json()["members"][0]["permissions"] == ["orders.read"], "a refused PUT changes nothing"


def recipients_of(answer) -> list:
    return sorted(n["user_id"] for n in answer["notifications"])


def test_scope_recipient_rules(h):
    store = uid("st")
    scope = f"store:{store}"
    owner, agent, cashier, stock = sorted(uid() for _ in range(4))
    put_member(h, scope, owner, ALL_PERMISSIONS, expect=201)
    put_member(h, scope, agent, ["conversations.read"], expect=201)
    put_member(h, scope, cashier, ["orders.read"], expect=201)
    put_member(h, scope, stock, ["inventory.read"], expect=201)
    put_member(h, uid("st"), cashier, ["conversations.read"], expect=201)   # another scope does not count
    tokens = {u: user_token(h, u) for u in (owner, agent, cashier, stock)}

    def call(recipients, kind="news.post", **extra):
        return send(h, {"recipients": recipients, "kind": kind, "title": "T", "body": "B", **extra}).json()

    # {scope, permission}: holders only.
    answer = call({"scope": scope, "permission": "orders.read"})
    assert recipients_of(answer) == sorted([owner, cashier]) and answer["skipped_recipients"] == [], answer
    nid = {n["user_id"]: n["id"] for n in answer["notifications"]}
    assert nid[cashier] in inbox_ids(h, tokens[cashier])
    assert inbox_ids(h, tokens[agent]) == [] and inbox_ids(h, tokens[stock]) == []
    [item] = inbox(h, tokens[owner]).json()["notifications"]
    assert item["scope"] == scope, "the scope of a scope rule is the notification's scope"
    # {scope} and a kind without `requires`: every member; with one: the kind's permission.
    assert recipients_of(call({"scope": scope})) == sorted([owner, agent, cashier, stock])
    conversation = {"data": {"store_id": store, "conversation_id": "c-1"},
                    "args": {"customer_name": "Ana", "message": "Oi", "assigned_by": "Bia"}}
    assert recipients_of(call({"scope": scope}, kind="conversations.message_received", **conversation)) == sorted([owner, agent])

    # {scope, assignee: u}: u alone.
    answer = call({"scope": scope, "assignee": agent}, kind="conversations.assigned", **conversation)
    assert recipients_of(answer) == [agent] and answer["skipped_recipients"] == [], answer
    assert inbox_ids(h, tokens[agent])[0] == answer["notifications"][0]["id"]
    assert len(inbox_ids(h, tokens[owner])) == 3, "the owner got neither the assigned conversation"
    # {scope, assignee: null}: every member holding the kind's permission.
    answer = call({"scope": scope, "assignee": None}, kind="conversations.handed_over", **conversation)
    assert recipients_of(answer) == sorted([owner, agent]), answer
    # An assignee who is not a member, or lacks the permission: nobody, and why.
    stranger = uid()
    answer = call({"scope": scope, "assignee": stranger}, kind="conversations.assigned", **conversation)
    assert answer["notifications"] == [], answer
    assert answer["skipped_recipients"] == [{"user_id": stranger, "reason": "not_a_member"}], answer
    answer = call({"scope": scope, "assignee": cashier}, kind="conversations.assigned", **conversation)
    assert answer["notifications"] == [], answer
    assert answer["skipped_recipients"] == [{"user_id": cashier, "reason": "missing_permission"}], answer
    assert inbox_ids(h, user_token(h, stranger)) == []
    assert len(inbox_ids(h, tokens[cashier])) == 2
    # A scope nobody belongs to: nobody.
    answer = call({"scope": uid("st"), "permission": "orders.read"})
    assert answer["notifications"] == [] and answer["skipped_recipients"] == [], answer


def test_kind_permission_applies_to_explicit_user_ids_in_a_scope(h, provider_double):
    """Issue 14: `orders.paid` needs `orders.read` (seed 000's table) whoever names the recipients:
    explicit `user_ids` in a store reach only its members holding it, and a call's `permission`
    narrows the store without standing in for the kind's. The others get nothing (no inbox row,
    no push) and are named in `skipped_recipients`."""
    double = provider_double
    store = uid("st")
    scope = f"store:{store}"
    owner, cashier, agent, stranger = (uid() for _ in range(4))
    put_member(h, scope, owner, ALL_PERMISSIONS, expect=201)
    put_member(h, scope, cashier, ["inventory.read"], expect=201)
    put_member(h, scope, agent, ["conversations.read"], expect=201)
    put_member(h, uid("st"), stranger, ["orders.read"], expect=201)   # another store does not count
    devices = {u: Device(h, u, "ios") for u in (owner, cashier, agent, stranger)}

    answer = send(h, {"recipients": {"user_ids": [owner, cashier, stranger]}, **order_paid(store, "o-1")}).json()
    assert recipients_of(answer) == [owner] and answer["push_queued"] == 1, answer
    assert sorted(answer["skipped_recipients"], key=lambda r: r["user_id"]) == sorted(
        [{"user_id": cashier, "reason": "missing_permission"}, {"user_id": stranger, "reason": "not_a_member"}],
        key=lambda r: r["user_id"]), answer
    [push] = wait_pushes(double, devices[owner], 1)
    assert push["body"]["order_id"] == "o-1", push["body"]
    assert inbox_ids(h, devices[cashier].access) == [] and inbox_ids(h, devices[stranger].access) == []

    # {scope, permission}: the call's permission, and the kind's too.
    answer = send(h, {"recipients": {"scope": scope, "permission": "conversations.read"}, **order_paid(store, "o-2")}).json()
    assert recipients_of(answer) == [owner], answer
    assert answer["skipped_recipients"] == [{"user_id": agent, "reason": "missing_permission"}], answer
    assert inbox_ids(h, devices[agent].access) == []
    wait_pushes(double, devices[owner], 2)

    # A kind that requires nothing reaches every named user, member or not.
    answer = send(h, {"recipients": {"user_ids": [cashier, stranger]}, "kind": "news.post", "scope": scope,
                      "title": "T", "body": "B"}).json()
    assert recipients_of(answer) == sorted([cashier, stranger]) and answer["skipped_recipients"] == [], answer
    assert [pushes_to(double, devices[u]) for u in (agent,)] == [[]]


# --- idempotency -----------------------------------------------------------------------------


def test_idempotency_key_sends_once(h, provider_double):
    double = provider_double
    user = uid()
    phone = Device(h, user, "ios")
    key = uid("idem")
    body = {"recipients": {"user_ids": [user]}, "kind": "news.post", "title": "Once", "body": "only once",
            "idempotency_key": key}
    first = send(h, body, 201)
    assert first.json()["push_queued"] == 1 and "Idempotent-Replayed" not in first.headers, first.text
    second = send(h, body, 200)
    assert second.headers.get("Idempotent-Replayed") == "true", second.headers
    assert second.json() == first.json()

    # A different body under the same key: refused, nothing stored.
    changed = dict(body, body="another text")
    assert_error(send(h, changed, 409), 409, "idempotency_key_reused")

    wait_pushes(double, phone, 1)
    # A push sent afterwards arrives; a duplicate of the first would have been queued before it.
    sentinel = notify(h, user, body="sentinel")["notifications"][0]
    wait_pushes(double, phone, 2)
    wait_outcome(h, sentinel["id"], "sent")
    bodies = [e["body"]["aps"]["alert"]["body"] for e in pushes_to(double, phone)]
    assert sorted(bodies) == ["only once", "sentinel"], bodies
    assert inbox_ids(h, phone.access) == [sentinel["id"], first.json()["notifications"][0]["id"]]
    assert outcomes(h, first.json()["notifications"][0]["id"]).count("queued") == 1


# --- catalog payloads (seed 001) -------------------------------------------------------------

TEXTS = {
    "orders.paid": {"pt": ("Pedido #1042 pago", "R$ 1.234,56 · Ana Souza"),
                    "en": ("Order #1042 paid", "R$ 1.234,56 · Ana Souza"),
                    "es": ("Pedido #1042 pagado", "R$ 1.234,56 · Ana Souza")},
    "conversations.message_received": {"pt": ("Mensagem de Ana Souza", "Oi, tudo bem?"),
                                       "en": ("Message from Ana Souza", "Oi, tudo bem?"),
                                       "es": ("Mensaje de Ana Souza", "Oi, tudo bem?")},
    "inventory.low_stock": {"pt": ("Estoque baixo: Camiseta", "M / Azul: 2 un. em Loja Centro"),
                            "en": ("Low stock: Camiseta", "M / Azul: 2 left at Loja Centro"),
                            "es": ("Stock bajo: Camiseta", "M / Azul: quedan 2 en Loja Centro")},
}
LANGUAGE = {"pt-BR": "pt", "en-US": "en", "es-ES": "es", "fr-FR": "pt"}   # French falls back to the default


def test_catalog_pushes_match_seed_001_field_by_field(h, provider_double):
    double = provider_double
    store, user = uid("st"), uid()
    put_member(h, f"store:{store}", user, ALL_PERMISSIONS, expect=201)
    devices = [Device(h, user, platform, locale) for locale in LANGUAGE for platform in ("ios", "android")]
    put_prefs(h, devices[0].access, {"is_enabled": True,
                                     "enabled_events": ["orders.paid", "conversations.message_received", "inventory.low_stock"]},
              store=store)
    order, conversation, variant = str(uuid.uuid4()), str(uuid.uuid4()), str(uuid.uuid4())
    cases = [
        (order_paid(store, order, badge=3), {"store_id": store, "order_id": order},
         f"order-paid-{order}", f"store-{store}", "orders"),
        (message_received(store, conversation, badge=3), {"store_id": store, "conversation_id": conversation},
         f"conv-{conversation}", f"conv-{conversation}", "conversations"),
        (low_stock(store, variant, badge=3), {"store_id": store, "product_id": "p-1", "variant_id": variant},
         f"low-stock-{variant}", f"store-{store}", "inventory"),
    ]
    problems = []   # every difference, so one run shows them all
    for n, (call, data, collapse, thread, channel) in enumerate(cases, start=1):
        kind = call["kind"]
        answer = send(h, to_user(user, call)).json()
        assert answer["push_queued"] == len(devices) and answer["skipped"] == 0, answer
        for device in devices:
            entry = wait_pushes(double, device, n)[n - 1]
            # (The double notes FCM's lower-case `high`, which FCM accepts and seed 001 shows.)
            assert entry["status"] == 200 and (device.platform == "android" or entry["notes"] == []), entry
            title, body = TEXTS[kind][LANGUAGE[device.locale]]
            where = f"{kind} {device.platform} {device.locale}"
            if device.platform == "ios":
                expected = {
                    "aps": {"alert": {"title": title, "subtitle": "Loja Azul", "body": body},
                            "sound": "default", "badge": 3, "thread-id": thread},
                    "kind": kind, **data,
                }
                problems += [f"{where}: APNs body {d}" for d in differences(entry["body"], expected)]
                headers = entry["headers"]
                wanted = {"apns-collapse-id": collapse, "apns-push-type": "alert", "apns-priority": "10"}
                got = {k: headers.get(k) for k in wanted}
                if got != wanted:
                    problems.append(f"{where}: APNs headers {got}, expected {wanted}")
                if abs(int(headers["apns-expiration"]) - (entry["time"] + 3600)) > 5:
                    problems.append(f"{where}: apns-expiration {headers['apns-expiration']}, expected ~{entry['time'] + 3600:.0f}")
            else:
                # Issue 15 (PU-8c): the apns block an FCM token on iOS needs, with the alert's APNs options.
                apns_headers = ((entry["body"].get("message") or {}).get("apns") or {}).get("headers") or {}
                expiration = apns_headers.pop("apns-expiration", None)
                if expiration is None or abs(int(expiration) - (entry["time"] + 3600)) > 5:
                    problems.append(f"{where}: FCM apns-expiration {expiration}, expected ~{entry['time'] + 3600:.0f}")
                expected = {"message": {
                    "token": device.token,
                    "notification": {"title": title, "body": body},
                    "data": {"kind": kind, **data},
                    "android": {"priority": "high", "ttl": "3600s", "collapse_key": collapse,
                                "notification": {"channel_id": channel, "tag": collapse, "notification_count": 3,
                                                 "sound": "default"}},
                    "apns": {"headers": {"apns-collapse-id": collapse, "apns-push-type": "alert", "apns-priority": "10"},
                             "payload": {"aps": {"badge": 3, "sound": "default", "thread-id": thread}}},
                }}
                problems += [f"{where}: FCM body {d}" for d in differences(entry["body"], expected)]
    assert not problems, f"{len(problems)} pushes differ from seed 001:\n" + "\n".join(problems)


TEST_PUSH = {"pt": ("Notificação de teste", "As notificações estão funcionando neste aparelho."),
             "en": ("Test notification", "Notifications are working on this device."),
             "es": ("Notificación de prueba", "Las notificaciones funcionan en este dispositivo.")}


def test_device_test_push_is_the_catalogs_test_kind(h, provider_double):
    """Issue 14 / seed 000: the test push carries `kind: "test"` under the catalog's kind key (not
    `type`), and the catalog's `test` texts in the device's language, the catalog's default language
    for a device without one; Portuguese exactly as the seed words it."""
    double = provider_double
    user = uid()
    devices = [Device(h, user, platform, locale) for locale in ("pt-BR", "en-US", "es-ES", None)
               for platform in ("ios", "android")]
    problems = []
    for device in devices:
        r = HTTP.post(h.url(f"/v1/me/devices/{device.id}/test"), headers=auth(device.access))
        assert r.status_code == 200, r.text
        [entry] = wait_pushes(double, device, 1)
        title, body = TEST_PUSH[(device.locale or "pt-BR")[:2]]   # merchant's default_locale is pt-BR
        where = f"{device.platform} {device.locale}"
        if device.platform == "ios":
            expected = {"aps": {"alert": {"title": title, "body": body}, "sound": "default"}, "kind": "test"}
            problems += [f"{where}: APNs body {d}" for d in differences(entry["body"], expected)]
        else:
            message = entry["body"]["message"]
            got = {"notification": message.get("notification"), "data": message.get("data"),
                   "priority": message["android"].get("priority"), "sound": message["android"].get("notification", {}).get("sound")}
            expected = {"notification": {"title": title, "body": body}, "data": {"kind": "test"}, "priority": "high",
                        "sound": "default"}
            problems += [f"{where}: FCM {d}" for d in differences(got, expected)]
    assert not problems, "\n".join(problems)


def test_device_test_push_takes_the_users_language_before_the_catalogs_default(h, provider_double):
    """rotation10: the test push went device locale -> catalog default, where every other push
    goes device locale -> the user's language -> the default (NO-5, rotation9). A German phone of a
    user whose profile says Mexican Spanish got the catalog's Portuguese; it gets Spanish now, and a
    language the catalog has still wins over the user's."""
    double = provider_double
    user = uid()
    german, english = Device(h, user, "android", "de-DE"), Device(h, user, "ios", "en-GB")
    r = HTTP.put(h.url(f"/v1/users/{user}"), json={"locale": "es-MX"}, headers=h.server_headers())
    assert r.status_code in (200, 201), r.text
    for device, language in ((german, "es"), (english, "en")):
        r = HTTP.post(h.url(f"/v1/me/devices/{device.id}/test"), headers=auth(device.access))
        assert r.status_code == 200, r.text
        [entry] = wait_pushes(double, device, 1)
        title, body = TEST_PUSH[language]
        got = entry["body"]["aps"]["alert"] if device.platform == "ios" else entry["body"]["message"]["notification"]
        assert got == {"title": title, "body": body}, (device.locale, got)


def test_badge_unread_policy_never_and_call_priority(h, provider_double):
    double = provider_double
    user = uid()
    phone, pixel = Device(h, user, "ios"), Device(h, user, "android")
    # policy never: stored and listed, no push.
    quiet = [notify(h, user, body=f"quiet {n}", push={"policy": "never"})["notifications"][0]["id"] for n in range(2)]
    for nid in quiet:
        assert sorted(outcomes(h, nid)) == ["skipped_policy", "skipped_policy"], deliveries(h, nid)
    assert unread_count(h, phone.access) == 2

    # badge "unread": the inbox's unread count, this notification included; urgent → time-sensitive.
    answer = notify(h, user, body="third", badge="unread", priority="urgent")
    assert answer["push_queued"] == 2, answer
    [apns], [fcm] = wait_pushes(double, phone, 1), wait_pushes(double, pixel, 1)
    assert apns["body"] == {"aps": {"alert": {"title": "Hello", "body": "third"}, "badge": 3,
                                    "interruption-level": "time-sensitive"}, "kind": "news.post"}, apns["body"]
    # No collapse key: the notification's id is the Android tag and the apns-collapse-id, so a
    # resend replaces the first copy (ADR 0020), even where the catalog keeps it out of the data.
    nid = answer["notifications"][0]["id"]
    assert apns["headers"]["apns-collapse-id"] == nid, apns["headers"]
    assert fcm["body"]["message"]["android"] == {"priority": "high", "ttl": "3600s",
                                                 "notification": {"notification_count": 3, "tag": nid}}, fcm["body"]
    assert fcm["body"]["message"]["data"] == {"kind": "news.post"}, "the merchant catalog sends no notification id"
    # A call's priority wins over the kind's: normal → Android normal, no interruption level.
    store = uid("st")
    put_member(h, f"store:{store}", user, ["orders.read"], expect=201)   # orders.paid needs it (NO-6)
    notify(h, user, kind="orders.paid", title=None, body=None, priority="normal", **{
        k: v for k, v in order_paid(store, "o-1").items() if k != "kind"})
    apns, fcm = wait_pushes(double, phone, 2)[1], wait_pushes(double, pixel, 2)[1]
    assert "interruption-level" not in apns["body"]["aps"], apns["body"]
    assert fcm["body"]["message"]["android"]["priority"] == "normal", fcm["body"]


def test_push_only_notification_cannot_be_marked_read(h):
    """persist:false keeps a notification out of the inbox; its id (seen in notification.created)
    must not be markable through the inbox either: 404 like any id not in the user's inbox, and no
    `notification.read` broadcast."""
    user = uid()
    access = user_token(h, user)
    stream = h.stream(token=access)
    stream.ready()
    hidden = notify(h, user, body="push only", persist=False)["notifications"][0]["id"]
    assert envelope(stream.expect("notification.created"))["data"]["id"] == hidden
    r = mark_read(h, access, hidden)
    assert_error(r, 404, "not_found")
    marker = notify(h, user, body="marker")["notifications"][0]["id"]
    event = stream.next()
    assert event.event == "notification.created" and envelope(event)["data"]["id"] == marker, event


# --- bad input -------------------------------------------------------------------------------

BAD_CALLS = [
    ("missing recipients", lambda u: {"kind": "news.post", "body": "x"}, 400, "recipients"),
    ("empty user_ids", lambda u: {"recipients": {"user_ids": []}, "kind": "news.post", "body": "x"}, 400, "recipients.user_ids"),
    ("duplicate key", lambda u: '{"recipients":{"user_ids":["%s"]},"kind":"a","kind":"b","body":"x"}' % u, 400, None),
    ("expires_at in seconds", lambda u: {"recipients": {"user_ids": [u]}, "kind": "news.post", "body": "x", "expires_at": 1795990000}, 400, "expires_at"),
    ("ttl 0 with unless_acked", lambda u: {"recipients": {"user_ids": [u]}, "kind": "news.post", "body": "x", "ttl_seconds": 0,
                                           "push": {"policy": "unless_acked"}}, 400, "push.policy"),
    ("empty user id", lambda u: {"recipients": {"user_ids": [u, ""]}, "kind": "news.post", "body": "x"}, 400, "recipients.user_ids"),
    ("empty assignee", lambda u: {"recipients": {"scope": "s", "assignee": ""}, "kind": "news.post", "body": "x"}, 400, "recipients.assignee"),
    ("lone brace behind a combining mark", lambda u: {"recipients": {"user_ids": [u]}, "kind": "news.post", "title": "a}\u0301b"}, 400, "title"),
    ("bad user id", lambda u: {"recipients": {"user_ids": [u, "a b"]}, "kind": "news.post", "body": "x"}, 400, "recipients.user_ids"),
    ("user_ids and scope", lambda u: {"recipients": {"user_ids": [u], "scope": "store:1"}, "kind": "news.post", "body": "x"},
     400, "recipients"),
    ("assignee and permission", lambda u: {"recipients": {"scope": "store:1", "assignee": u, "permission": "orders.read"},
                                           "kind": "news.post", "body": "x"}, 400, "recipients.permission"),
    ("bad kind", lambda u: {"recipients": {"user_ids": [u]}, "kind": "news post!", "body": "x"}, 400, "kind"),
    ("kind too long", lambda u: {"recipients": {"user_ids": [u]}, "kind": "k" * 65, "body": "x"}, 400, "kind"),
    ("reserved data key aps", lambda u: {"recipients": {"user_ids": [u]}, "kind": "news.post", "body": "x",
                                         "data": {"aps": "1"}}, 400, "data"),
    ("reserved data key google.", lambda u: {"recipients": {"user_ids": [u]}, "kind": "news.post", "body": "x",
                                             "data": {"google.c.a": "1"}}, 400, "data"),
    ("reserved data key google", lambda u: {"recipients": {"user_ids": [u]}, "kind": "news.post", "body": "x",
                                            "data": {"google": "1"}}, 400, "data"),
    ("reserved data key gcm", lambda u: {"recipients": {"user_ids": [u]}, "kind": "news.post", "body": "x",
                                         "data": {"gcm": "1"}}, 400, "data"),
    ("reserved data key kind", lambda u: {"recipients": {"user_ids": [u]}, "kind": "news.post", "body": "x",
                                          "data": {"kind": "other"}}, 400, "data"),
    ("reserved data key delivery_id", lambda u: {"recipients": {"user_ids": [u]}, "kind": "news.post", "body": "x",
                                                 "data": {"delivery_id": "1"}}, 400, "data"),
    ("nested data", lambda u: {"recipients": {"user_ids": [u]}, "kind": "news.post", "body": "x",
                               "data": {"a": {"b": "c"}}}, 400, "data.a"),
    ("data too big", lambda u: {"recipients": {"user_ids": [u]}, "kind": "news.post", "body": "x",
                                "data": {"blob": "x" * 2100}}, 413, "data"),
    ("bad priority", lambda u: {"recipients": {"user_ids": [u]}, "kind": "news.post", "body": "x", "priority": "max"},
     400, "priority"),
    ("ttl and expires_at", lambda u: {"recipients": {"user_ids": [u]}, "kind": "news.post", "body": "x", "ttl_seconds": 60,
                                      "expires_at": int(time.time() * 1000) + 60_000}, 400, "ttl_seconds"),
    ("ttl too long", lambda u: {"recipients": {"user_ids": [u]}, "kind": "news.post", "body": "x", "ttl_seconds": 2_419_201},
     400, "ttl_seconds"),
    ("ack window without unless_acked", lambda u: {"recipients": {"user_ids": [u]}, "kind": "news.post", "body": "x",
                                                   "push": {"ack_window_ms": 500}}, 400, "push.ack_window_ms"),
    ("bad policy", lambda u: {"recipients": {"user_ids": [u]}, "kind": "news.post", "body": "x",
                              "push": {"policy": "sometimes"}}, 400, "push.policy"),
    ("unknown kind without texts", lambda u: {"recipients": {"user_ids": [u]}, "kind": "news.post"}, 400, "body"),
    ("catalog kind missing an argument", lambda u: {"recipients": {"user_ids": [u]}, "kind": "orders.paid",
                                                    "data": {"store_id": "s", "order_id": "o"}}, 400, "title.en"),
    ("bad badge word", lambda u: {"recipients": {"user_ids": [u]}, "kind": "news.post", "body": "x", "badge": "lots"},
     400, "badge"),
    ("negative badge", lambda u: {"recipients": {"user_ids": [u]}, "kind": "news.post", "body": "x", "badge": -1},
     400, "badge"),
    ("bad locale key", lambda u: {"recipients": {"user_ids": [u]}, "kind": "news.post", "title": {"not a tag": "x"},
                                  "body": "x"}, 400, "title"),
    ("empty idempotency key", lambda u: {"recipients": {"user_ids": [u]}, "kind": "news.post", "body": "x",
                                         "idempotency_key": ""}, 400, "idempotency_key"),
]


@pytest.mark.parametrize("make,status,field", [c[1:] for c in BAD_CALLS], ids=[c[0] for c in BAD_CALLS])
def test_bad_calls_are_refused_and_store_nothing(h, make, status, field):
    user = uid()
    r = send(h, make(user), status)
    body = assert_error(r, status, "payload_too_large" if status == 413 else "invalid_request", field)
    assert body["message"], body
    assert inbox_ids(h, user_token(h, user)) == [] and unread_count(h, user_token(h, user)) == 0


def test_calls_without_the_server_key_are_refused(h):
    user = uid()
    access = user_token(h, user)
    body = {"recipients": {"user_ids": [user]}, "kind": "news.post", "body": "x"}
    for headers in ({}, auth("wrong-key"), auth(access)):
        r = HTTP.post(h.url("/v1/notifications"), json=body, headers=headers)
        assert_error(r, 401, "unauthorized")
    assert inbox_ids(h, access) == []
