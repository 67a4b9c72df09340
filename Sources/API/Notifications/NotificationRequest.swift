import Foundation
import HeraldCore
import Realtime

/// A validated `POST /v1/notifications` call: recipients, the idempotency key and the plan every
/// recipient's notification follows.
struct NotificationRequest: Sendable {
    let recipients: Recipients
    private(set) var plan: NotificationPlan
    /// Extra message for a resource channel, published once per call.
    let live: PublishRequest?
    let idempotencyKey: String?
    /// `plan.jsonText()`, made once: it is stored as the call's plan until its pushes are planned.
    let planJSON: String
    /// The texts, arguments and data as every recipient's row stores them (JSON objects, keys
    /// sorted), made here on the event loop instead of in the writer's transaction.
    let titleJSON: String?, bodyJSON: String?, argsJSON: String?, dataJSON: String

    /// Most recipients one call may reach.
    static let maxRecipients = 1000
    /// Most bytes of `data` as compact JSON: with the texts it must fit a 4 KiB push (PU-3).
    static let maxDataBytes = 2048
    /// Most Unicode scalars of one title or body text: what the OpenAPI's `maxLength` counts. No
    /// provider limits a text by itself; a push's texts are shortened to fit its payload.
    static let maxTextScalars = 1024
    /// Most locales in one title or body map.
    static let maxLocales = 32
    /// Most bytes of `args` as compact JSON; most arguments; most characters of one value.
    static let maxArgumentBytes = 2048, maxArguments = 32, maxArgumentValueBytes = 1024
    /// Most bytes of a whole plan (texts, args, data, live data) as stored for the call.
    static let maxPlanBytes = 96 * 1024
    /// Longest `ack_window_ms`: past it, the push would be late anyway.
    static let maxAckWindowMilliseconds = 600_000
    /// Data keys the providers or Herald itself use.
    /// FCM refuses `google` and `gcm` themselves as well as the `google.`/`gcm.` prefixes.
    static let reservedDataKeys: Set<String> = ["aps", "from", "message_type", "collapse_key", "notification", "cursor", "delivery_id",
                                                "google", "gcm"]

    /// - Parameters:
    ///   - now: unix ms (resolves `ttl_seconds`).
    ///   - catalog: the app's kind catalog (kind defaults, text checks).
    /// - Throws: `HTTPError` 400 `invalid_request` naming the field, or 413 for oversized data.
    init(body: NotificationBody, now: Int64, catalog: NotificationCatalog, payload: PayloadOptions = .flat,
         maxLiveDataBytes: Int) throws(HTTPError) {
        let recipients = try Self.recipients(body.recipients)
        self.recipients = recipients
        guard Self.isName(body.kind) else {
            throw HTTPError.invalid("kind", "kind must be 1-64 characters of A-Z a-z 0-9 _ - . :")
        }
        // The kind's defaults read once: each `kind?.…` copied the whole definition (issue 17).
        let kind: (priority: String?, audience: String?, hasText: Bool)? = catalog.kind(body.kind).map {
            ($0.priority, $0.audience, $0.title != nil || $0.body != nil)
        }
        let scope = body.scope ?? {
            switch recipients {
            case .users: return nil
            case .scopePermission(let scope, _), .scopeAssignee(let scope, _): return scope
            }
        }()
        if let scope, !Self.isName(scope, max: 200) {
            throw HTTPError.invalid("scope", "scope must be 1-200 characters of A-Z a-z 0-9 _ - . :")
        }
        // Taken apart once: each use of an optional `Texts` copied and destroyed it (issue 17).
        let (titleMap, titleText) = try Self.texts(body.title, field: "title")
        let (bodyMap, bodyText) = try Self.texts(body.body, field: "body")
        let data = try Self.data(body.data, payload: payload)
        for key in data.keys {
            guard !key.isEmpty else { throw HTTPError.invalid("data", "data keys must not be empty") }
            if Self.reservedDataKeys.contains(key) || key.hasPrefix("google.") || key.hasPrefix("gcm.")
                || key == catalog.kindKey || key == catalog.notificationIDKey {
                throw HTTPError.invalid("data", "data key '\(key)' is reserved by the push providers or by Herald")
            }
        }
        let dataJSON = JSONText.object(data)
        let dataBytes = dataJSON.utf8.count
        guard dataBytes <= Self.maxDataBytes else {
            throw HTTPError(413, "payload_too_large", "data is \(dataBytes) bytes; a push carries at most \(Self.maxDataBytes)", field: "data")
        }
        let push = try Self.push(body.push)
        if push.policy == .unlessAcked, body.ttl_seconds == 0 {
            throw HTTPError.invalid("push.policy", "ttl_seconds 0 means now or never; it cannot wait for an ack window")
        }
        let priority = try Self.priority(body.priority ?? kind?.priority ?? "normal")
        let expiresAt = try Self.expiry(ttlSeconds: body.ttl_seconds, expiresAt: body.expires_at, now: now)
        var badge: NotificationPlan.Badge?
        switch body.badge {
        case nil: badge = nil
        case .number(let n)?:
            guard (0...99_999).contains(n) else { throw HTTPError.invalid("badge", "badge must be a whole number 0 to 99999 or \"unread\"") }
            badge = .number(n)
        case .keyword("unread")?: badge = .unread
        case .keyword?: throw HTTPError.invalid("badge", "badge must be a whole number 0 to 99999 or \"unread\"")
        }
        if let key = body.collapse_key, key.isEmpty || key.unicodeScalars.count > 64 || !NotificationRenderer.isSendableCollapseKey(key) {
            throw HTTPError.invalid("collapse_key", "collapse_key is 1-64 characters without control characters or a space at either end "
                                    + "(it is sent as the apns-collapse-id header)")
        }
        try Self.checkPushNames(thread: body.thread_id, sound: body.sound, channel: body.android_channel_id)
        let audience = body.audience ?? kind?.audience ?? "everyone"
        guard Self.isName(audience, max: 64) else { throw HTTPError.invalid("audience", "audience must be a name such as everyone or staff") }
        if push.type == .alert {
            guard titleMap != nil || bodyMap != nil || kind?.hasText == true else {
                throw HTTPError.invalid("body", "kind '\(body.kind)' is not in the catalog: give title or body")
            }
        }
        let arguments = body.args ?? [:]
        // Counted in Unicode scalars, as JSON Schema's maxLength counts (the OpenAPI document states them).
        guard arguments.count <= Self.maxArguments else { throw HTTPError.invalid("args", "at most \(Self.maxArguments) arguments") }
        for (name, value) in arguments
        where name.isEmpty || name.unicodeScalars.count > 64 || value.unicodeScalars.count > Self.maxArgumentValueBytes {
            throw HTTPError.invalid("args", "each argument name is 1-64 characters and each value at most \(Self.maxArgumentValueBytes) characters")
        }
        let argumentsJSON = JSONText.object(arguments)
        let argumentBytes = argumentsJSON.utf8.count
        guard argumentBytes <= Self.maxArgumentBytes else {
            throw HTTPError(413, "payload_too_large", "args is \(argumentBytes) bytes; the limit is \(Self.maxArgumentBytes)", field: "args")
        }
        do {
            try NotificationRenderer(catalog: catalog).validate(kind: body.kind, title: titleText, body: bodyText,
                                                                arguments: arguments, data: data,
                                                                collapseKey: body.collapse_key, threadID: body.thread_id)
        } catch {
            throw HTTPError.invalid(error.field ?? "body", error.message)
        }
        // Made here and assigned once: copying a made plan to set `live` retained its every field.
        var plan = NotificationPlan(
            kind: body.kind, scope: scope, title: titleMap, body: bodyMap, arguments: arguments, data: data,
            collapseKey: body.collapse_key, threadID: body.thread_id, sound: body.sound, androidChannelID: body.android_channel_id,
            priority: priority, expiresAt: expiresAt, ttlSeconds: body.ttl_seconds, badge: badge, persist: body.persist ?? true, policy: push.policy,
            ackWindowMilliseconds: push.ackWindow, type: push.type, audience: audience, trackOpens: body.track_opens ?? false,
            idempotencyKey: body.idempotency_key)
        let live = try body.live.map { live throws(HTTPError) in try Self.live(live, maxDataBytes: maxLiveDataBytes) }
        self.live = live
        plan.live = live.map { .init(channel: $0.channel.rawValue, event: $0.event.rawValue, data: $0.data, retain: $0.retain) }
        self.plan = plan
        // NUL: PostgreSQL's text cannot hold it (libpq ends a parameter there), so "k\u0000x" would
        // be stored as "k" and answer another call's key.
        if let key = body.idempotency_key, key.isEmpty || key.utf8.count > 255 || key.utf8.contains(0) {
            throw HTTPError.invalid("idempotency_key", "idempotency_key is 1-255 bytes without NUL (U+0000)")
        }
        idempotencyKey = body.idempotency_key
        let titleJSON = plan.title.map(JSONText.object)
        let bodyJSON = plan.body.map(JSONText.object)
        self.titleJSON = titleJSON
        self.bodyJSON = bodyJSON
        argsJSON = arguments.isEmpty ? nil : argumentsJSON
        self.dataJSON = dataJSON
        // The plan's objects are the texts just made for the rows, embedded rather than written again.
        planJSON = plan.jsonText(made: .init(title: titleJSON, body: bodyJSON, arguments: argumentsJSON, data: dataJSON))
        // Bound the stored plan and texts, so one call cannot fill the disk.
        guard planJSON.utf8.count <= Self.maxPlanBytes else {
            throw HTTPError(413, "payload_too_large", "the notification is \(planJSON.utf8.count) bytes of texts, args, data and live data; the limit is \(Self.maxPlanBytes)")
        }
    }

    /// The request in one canonical text (sorted keys, defaults filled in), so the idempotency
    /// check compares meaning, not bytes: the same call with its keys reordered is the same call.
    /// A relative `ttl_seconds` stays relative here: the expiry it gives moves with the clock, and a
    /// retry a second later is still the same call. `user_ids` are a set (repeats count once), so
    /// they are compared sorted: a retry that lists them in another order is the same call
    /// (breaker10: a backend building them from a set got 409 `idempotency_key_reused`).
    var canonicalText: String {
        var timeless = plan
        if timeless.ttlSeconds != nil { timeless.expiresAt = nil }
        let who: Recipients = if case .users(let ids) = recipients { .users(ids.sorted()) } else { recipients }
        return "\(who)\u{0}\(timeless.jsonText())"
    }

    private static func recipients(_ body: NotificationBody.RecipientsBody) throws(HTTPError) -> Recipients {
        if let ids = body.userIDs {
            guard body.scope == nil, body.permission == nil, body.assignee == nil else {
                throw HTTPError.invalid("recipients", "give user_ids, or scope with permission or assignee, not both")
            }
            guard !ids.isEmpty, ids.count <= maxRecipients else {
                throw HTTPError.invalid("recipients.user_ids", "user_ids must hold 1 to \(maxRecipients) user ids")
            }
            var seen: Set<String> = []
            var unique: [String] = []
            for id in ids {
                guard ChannelName.personal(userID: id) != nil else {
                    throw HTTPError.invalid("recipients.user_ids", "'\(id)' is not a valid user id (it must form the channel user:{id})")
                }
                // One recipient, the usual call, needs no set to drop repeats.
                if ids.count > 1, seen.insert(id).inserted { unique.append(id) }
            }
            return .users(ids.count == 1 ? ids : unique)
        }
        guard let scope = body.scope, isName(scope, max: 200) else {
            throw HTTPError.invalid("recipients", "recipients needs user_ids, or a scope of 1-200 characters of A-Z a-z 0-9 _ - . :")
        }
        if let assignee = body.assignee {
            guard body.permission == nil else {
                throw HTTPError.invalid("recipients.permission", "the assignee rule uses the kind's permission; give permission or assignee, not both")
            }
            if let assignee, ChannelName.personal(userID: assignee) == nil {
                throw HTTPError.invalid("recipients.assignee", "'\(assignee)' is not a valid user id")
            }
            return .scopeAssignee(scope: scope, assignee: assignee)
        }
        if let permission = body.permission, !isName(permission, max: 64) {
            throw HTTPError.invalid("recipients.permission", "permission must be 1-64 characters of A-Z a-z 0-9 _ - . :")
        }
        return .scopePermission(scope: scope, permission: body.permission)
    }

    /// A title or body: the texts by locale (`*` for one text) and as templates; both nil when absent.
    private typealias Texts = (byLocale: [String: String]?, localized: LocalizedText?)

    private static func texts(_ input: NotificationBody.TextInput?, field: String) throws(HTTPError) -> Texts {
        guard let input else { return (nil, nil) }
        let map: [String: String]
        switch input {
        case .single(let text):
            // One text, the usual call: no map to walk or to look `*` up in.
            guard !text.isEmpty, text.unicodeScalars.count <= maxTextScalars else { throw textSize(field, field) }
            do {
                return (["*": text], LocalizedText(single: try TextTemplate(text)))
            } catch {
                throw HTTPError.invalid(field, error.message)
            }
        case .byLocale(let byLocale):
            guard !byLocale.isEmpty else { throw HTTPError.invalid(field, "\(field) needs at least one locale") }
            guard byLocale.count <= maxLocales else { throw HTTPError.invalid(field, "\(field) has at most \(maxLocales) locales") }
            // Tags are checked as devices' are (RFC 5646 §2.1) and kept normalised, so a text's key
            // compares with a device's locale as stored; `pt-br` and `pt_BR` are one locale given two
            // texts, and which a device got would depend on the map's order (§2.1.1: case is not
            // significant).
            var given: [String: String] = [:]
            var texts: [String: String] = [:]
            for (tag, text) in byLocale.sorted(by: { $0.key < $1.key }) {
                guard let locale = LocaleTag(tag) else {
                    throw HTTPError.invalid(field, "'\(tag.prefix(40))' is not a locale tag such as pt, en or pt-BR (RFC 5646)")
                }
                if let other = given[locale.rawValue] {
                    throw HTTPError.invalid(field, "'\(other)' and '\(tag)' name one locale (tags are compared without regard to case, and _ is read as -)")
                }
                given[locale.rawValue] = tag
                texts[locale.rawValue] = text
            }
            map = texts
        }
        for (locale, text) in map where text.isEmpty || text.unicodeScalars.count > maxTextScalars {
            throw textSize("\(field).\(locale)", field)
        }
        do {
            return (map, try NotificationPlan.localized(map))
        } catch {
            throw HTTPError.invalid(field, error.message)
        }
    }

    /// The 400 for a text of `field` (`title`, `body`) that is empty or too long, at `path`.
    private static func textSize(_ path: String, _ field: String) -> HTTPError {
        HTTPError.invalid(path, "each \(field) is 1-\(maxTextScalars) characters")
    }

    private static func push(_ body: NotificationBody.PushBody?) throws(HTTPError) -> (policy: NotificationPlan.Policy, ackWindow: Int, type: NotificationPlan.PushType) {
        let policy: NotificationPlan.Policy
        switch body?.policy ?? "auto" {
        case "auto": policy = .auto
        case "always": policy = .always
        case "never": policy = .never
        case "unless_acked": policy = .unlessAcked
        default: throw HTTPError.invalid("push.policy", "policy must be auto, always, never or unless_acked")
        }
        let window = body?.ack_window_ms ?? 3000
        guard (0...maxAckWindowMilliseconds).contains(window) else {
            throw HTTPError.invalid("push.ack_window_ms", "ack_window_ms must be 0 to \(maxAckWindowMilliseconds)")
        }
        if body?.ack_window_ms != nil, policy != .unlessAcked {
            throw HTTPError.invalid("push.ack_window_ms", "ack_window_ms applies to policy unless_acked only")
        }
        let type: NotificationPlan.PushType
        switch body?.type ?? "alert" {
        case "alert": type = .alert
        case "wakeup": type = .wakeup
        default: throw HTTPError.invalid("push.type", "type must be alert or wakeup")
        }
        return (policy, window, type)
    }

    private static func priority(_ raw: String) throws(HTTPError) -> String {
        guard ["normal", "high", "urgent"].contains(raw) else {
            throw HTTPError.invalid("priority", "priority must be normal, high or urgent")
        }
        return raw
    }

    /// - Returns: unix ms, or nil for the providers' default (one hour, seed 001).
    private static func expiry(ttlSeconds: Int?, expiresAt: NotificationBody.Instant?, now: Int64) throws(HTTPError) -> Int64? {
        switch (ttlSeconds, expiresAt) {
        case (_?, _?):
            throw HTTPError.invalid("ttl_seconds", "give ttl_seconds or expires_at, not both")
        case (let ttl?, nil):
            guard (0...2_419_200).contains(ttl) else { throw HTTPError.invalid("ttl_seconds", "ttl_seconds must be 0 to 2419200 (28 days)") }
            return now + Int64(ttl) * 1000
        case (nil, .milliseconds(let ms)?):
            // Seconds given where milliseconds go would mean 1970: every push expired. Refuse.
            guard ms >= 1_000_000_000_000 else {
                throw HTTPError.invalid("expires_at", "expires_at is unix milliseconds; \(ms) looks like seconds")
            }
            guard ms <= now + 2_419_200_000 else {
                throw HTTPError.invalid("expires_at", "expires_at is unix milliseconds within the next 28 days")
            }
            return ms
        case (nil, .text(let text)?):
            // Strictly: a date that does not exist or an offset past 23:59 is refused, not rolled over.
            guard let ms = RFC3339.milliseconds(text) else {
                throw HTTPError.invalid("expires_at", "expires_at is unix milliseconds or an RFC 3339 time such as 2026-12-01T10:00:00Z")
            }
            guard ms <= now + 2_419_200_000 else { throw HTTPError.invalid("expires_at", "expires_at must be within the next 28 days") }
            return ms
        case (nil, nil):
            return nil
        }
    }

    private static func live(_ body: NotificationBody.LiveBody, maxDataBytes: Int) throws(HTTPError) -> PublishRequest {
        guard let channel = ChannelName(body.channel) else {
            throw HTTPError.invalid("live.channel", "channel must be 1-200 characters of A-Z a-z 0-9 _ - : . @")
        }
        var event = EventName.message
        if let raw = body.event {
            guard let name = EventName(raw), !name.isReserved else {
                throw HTTPError.invalid("live.event", "event must be 1-64 characters of A-Z a-z 0-9 _ - . : and not a reserved name")
            }
            event = name
        }
        let data = (body.data ?? .null).compactText
        guard data.utf8.count <= maxDataBytes else {
            throw HTTPError(413, "payload_too_large", "live.data is \(data.utf8.count) bytes; the limit is \(maxDataBytes)", field: "live.data")
        }
        return PublishRequest(channel: channel, event: event, data: data, retain: body.retain ?? false)
    }

    /// 1–`max` bytes of the event-name character set (`EventName.isName`).
    /// The call's data as flat strings. With a payload root key (AP-4), `{"<root>": {…}}` is the
    /// same data already namespaced, as seed 004's SDK reads it: its members become the data, with
    /// any other string members beside them. An object anywhere else is refused: FCM data values
    /// are strings.
    /// - Throws: `HTTPError` 400 on `data.<key>` for an object not under the root key, or a key in both.
    static func data(_ input: NotificationBody.DataInput?, payload: PayloadOptions) throws(HTTPError) -> [String: String] {
        guard let input else { return [:] }
        var data = input.strings
        for (key, object) in input.objects.sorted(by: { $0.key < $1.key }) {
            guard key == payload.rootKey else {
                let hint = payload.rootKey.map { " (an object is allowed only under the payload root key \"\($0)\")" } ?? ""
                throw HTTPError.invalid("data.\(key)", "data values must be strings\(hint)")
            }
            for (inner, value) in object {
                guard data[inner] == nil else {
                    throw HTTPError.invalid("data.\(key).\(inner)", "'\(inner)' is given both inside and beside the root key")
                }
                data[inner] = value
            }
        }
        return data
    }

    /// The longest `thread_id`, `sound` or `android_channel_id`, in Unicode scalars: what the
    /// OpenAPI's `maxLength` counts (JSON Schema counts code points), so a schema-driven client
    /// sending 200 two-byte characters is not refused. No provider limits these by bytes.
    static let maxPushNameScalars = 200

    /// The rule `thread_id`, `sound` and `android_channel_id` share on `POST /v1/notifications`
    /// and `POST /v1/push` (the `PushName` schema): each, when given, 1-200 characters (Unicode
    /// scalars) without NUL. NUL because `thread_id` has a PostgreSQL text column of its own,
    /// where libpq ends the parameter at NUL (stored cut, while SQLite keeps it whole); the length
    /// because they go uncut into payloads of 4,096 bytes where only the texts are shortened to
    /// fit: at most 800 bytes of UTF-8 each.
    ///
    /// - Parameter prefix: put before the member's name in the error's field (`notification.`
    ///   on `POST /v1/push`, whose members are inside `notification`).
    /// - Throws: 400 `invalid_request` naming the first member that breaks the rule.
    static func checkPushNames(thread: String?, sound: String?, channel: String?, prefix: String = "") throws(HTTPError) {
        for (member, value) in [("thread_id", thread), ("sound", sound), ("android_channel_id", channel)] {
            if let value, value.isEmpty || value.unicodeScalars.count > maxPushNameScalars || value.utf8.contains(0) {
                throw HTTPError.invalid(prefix + member, "\(member) is 1-\(maxPushNameScalars) characters without NUL (U+0000)")
            }
        }
    }

    static func isName(_ value: String, max: Int = 64) -> Bool {
        EventName.isName(value, maxLength: max)
    }
}
