import Realtime

/// A fast path for `POST /v1/notifications` bodies (NO-1): Foundation's `JSONDecoder` was the
/// largest single cost of the choke point's event loops. One pass over the bytes instead.
///
/// It runs only after `JSONSyntax.check` accepted the bytes. It takes a body when every field it
/// knows has the type the `Decodable` `NotificationBody` expects (`null` for an optional field
/// is its absence) and gives what the decoder would give. A member `NotificationBody.members` does
/// not name, at the top or in `recipients` or `push`, is a 400 naming it, found as the member is
/// visited (no second pass). Anything
/// else returns nil, so `JSONDecoder` reads it and names the field in its error: a wrong type
/// and `live` (its `data` is any JSON, which the decoder's `JSONValue` normalises).
///
/// Whole-number fields are judged here first, on every body, since the decoder would refuse
/// `1.5` without naming the field: a number with a fractional part or beyond 64 bits is a 400
/// naming it; one whose value is whole however written (`1.0`, `1e2`) is taken (ADR 0029).
enum NotificationBodyScanner {
    /// The body read before, and instead of, `RequestBody.check`'s syntax check: the common body
    /// costs one pass instead of two. It is a body only when `scan` reads it whole, and `scan`'s
    /// readers check all they read as the check does (`JSONScanner`), so such a body passes the
    /// check and `scan` after it gives the same. Anything else (bad JSON, a member the decoder
    /// reads, a 400 of `scan`'s) is nil: the route then runs the check and `scan` as before, so
    /// every refusal is the same as without this path.
    static func unchecked(_ b: [UInt8]) -> NotificationBody? {
        (try? scan(b)) ?? nil
    }

    /// - Returns: the body, or nil for the decoder to read it.
    /// - Throws: `HTTPError` 400 naming the field for `ttl_seconds`, `expires_at`, `badge` or
    ///   `push.ack_window_ms` given a number that is not a whole number within 64 bits, a
    ///   `badge` neither number nor string, or an unknown member.
    static func scan(_ b: [UInt8]) throws(HTTPError) -> NotificationBody? {
        var i = JSONScanner.skipSpace(b, 0)
        var fields = Fields()
        var complete = true
        let read = JSONScanner.object(b, &i, distinctKeys: true) { key, i in
            let start = i
            if fields.read(key, b, &i) { return true }
            guard fields.failure == nil else { return false }
            // Left to the decoder, but the rest is still read for the number checks above.
            complete = false
            i = start
            return JSONScanner.skipValue(b, &i)
        }
        if let failure = fields.failure { throw failure }
        guard read, complete, JSONScanner.skipSpace(b, i) == b.count,
              let recipients = fields.recipients, let kind = fields.kind else { return nil }
        return NotificationBody(
            recipients: recipients, kind: kind, scope: fields.scope, title: fields.title, body: fields.body, args: fields.args,
            data: fields.data.map { NotificationBody.DataInput(strings: $0) }, collapse_key: fields.collapseKey, thread_id: fields.threadID, sound: fields.sound,
            android_channel_id: fields.androidChannelID, priority: fields.priority, ttl_seconds: fields.ttlSeconds,
            expires_at: fields.expiresAt, badge: fields.badge, persist: fields.persist, live: nil, push: fields.push,
            audience: fields.audience, track_opens: fields.trackOpens, idempotency_key: fields.idempotencyKey)
    }

    /// The fields read so far.
    private struct Fields {
        var recipients: NotificationBody.RecipientsBody?
        var kind: String?
        var scope, collapseKey, threadID, sound, androidChannelID, priority, audience, idempotencyKey: String?
        var title, body: NotificationBody.TextInput?
        var args, data: [String: String]?
        var ttlSeconds: Int?
        var expiresAt: NotificationBody.Instant?
        var badge: NotificationBody.Badge?
        var persist, trackOpens: Bool?
        var push: NotificationBody.PushBody?
        /// Set by a read that found a number its field cannot take.
        var failure: HTTPError?

        /// Reads the value of `key`; false to leave the body to the decoder.
        mutating func read(_ key: String, _ b: [UInt8], _ i: inout Int) -> Bool {
            // `null` is an absent optional, as `decodeIfPresent` reads it; `recipients` and
            // `kind` are required, so a null there stays nil and the decoder reports it.
            if b[i] == UInt8(ascii: "n") {
                guard NotificationBody.members.names.contains(key) else {
                    failure = RequestBody.unknownMember(key, at: "", in: NotificationBody.members)
                    return false
                }
                return JSONScanner.skipLiteral(b, &i, "null")
            }
            // A `switch` over strings compares them in order: the members most bodies have come first.
            switch key {
            case "recipients":
                recipients = Self.recipients(b, &i, &failure)
                return recipients != nil
            case "kind": return Self.string(b, &i, into: &kind)
            case "title":
                title = Self.text(b, &i)
                return title != nil
            case "body":
                body = Self.text(b, &i)
                return body != nil
            case "args":
                args = JSONScanner.stringMap(b, &i, distinctKeys: true)
                return args != nil
            case "data":
                data = JSONScanner.stringMap(b, &i, distinctKeys: true)
                return data != nil
            case "scope": return Self.string(b, &i, into: &scope)
            case "collapse_key": return Self.string(b, &i, into: &collapseKey)
            case "thread_id": return Self.string(b, &i, into: &threadID)
            case "sound": return Self.string(b, &i, into: &sound)
            case "android_channel_id": return Self.string(b, &i, into: &androidChannelID)
            case "priority": return Self.string(b, &i, into: &priority)
            case "audience": return Self.string(b, &i, into: &audience)
            case "idempotency_key": return Self.string(b, &i, into: &idempotencyKey)
            case "ttl_seconds":
                guard let value = Self.wholeNumber(b, &i, "ttl_seconds", "ttl_seconds must be a whole number of seconds", &failure),
                      let int = Int(exactly: value) else { return false }
                ttlSeconds = int
                return true
            case "expires_at":
                if let value = Self.wholeNumber(b, &i, "expires_at", "expires_at must be whole unix milliseconds or an RFC 3339 string", &failure) {
                    expiresAt = .milliseconds(value)
                } else if failure == nil, let text = JSONScanner.jsonString(b, &i) {
                    expiresAt = .text(text)
                } else {
                    return false
                }
                return true
            case "badge":
                let message = "badge must be a whole number 0 to 99999 or \"unread\""
                if let value = Self.wholeNumber(b, &i, "badge", message, &failure), let int = Int(exactly: value) {
                    badge = .number(int)
                } else if failure == nil, let text = JSONScanner.jsonString(b, &i) {
                    badge = .keyword(text)
                } else {
                    failure = failure ?? HTTPError.invalid("badge", message)
                    return false
                }
                return true
            case "persist":
                persist = JSONScanner.bool(b, &i)
                return persist != nil
            case "track_opens":
                trackOpens = JSONScanner.bool(b, &i)
                return trackOpens != nil
            case "push":
                push = Self.push(b, &i, &failure)
                return push != nil
            case "live":
                return false
            default:
                failure = RequestBody.unknownMember(key, at: "", in: NotificationBody.members)
                return false
            }
        }

        /// The whole number at `i`, however written (`1e3`: `JSONScanner.wholeNumber`); nil for a
        /// value that is not a number, and nil with `failure` set (`field`, `message`) for a
        /// number with a fractional part or beyond 64 bits.
        private static func wholeNumber(_ b: [UInt8], _ i: inout Int, _ field: String, _ message: String,
                                        _ failure: inout HTTPError?) -> Int64? {
            guard i < b.count, b[i] == UInt8(ascii: "-") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b[i]) else { return nil }
            if let value = JSONScanner.wholeNumber(b, &i) { return value }
            failure = RequestBody.wholeNumberRefusal(field, message)
            return nil
        }

        private static func string(_ b: [UInt8], _ i: inout Int, into field: inout String?) -> Bool {
            field = JSONScanner.jsonString(b, &i)
            return field != nil
        }

        /// One text, or a per-locale map of texts.
        private static func text(_ b: [UInt8], _ i: inout Int) -> NotificationBody.TextInput? {
            if let single = JSONScanner.jsonString(b, &i) { return .single(single) }
            return JSONScanner.stringMap(b, &i, distinctKeys: true).map { .byLocale($0) }
        }

        private static func recipients(_ b: [UInt8], _ i: inout Int, _ failure: inout HTTPError?) -> NotificationBody.RecipientsBody? {
            var userIDs: [String]?, scope: String?, permission: String?, assignee: String??
            let read = JSONScanner.object(b, &i, distinctKeys: true) { key, i in
                let null = b[i] == UInt8(ascii: "n")
                if null, !JSONScanner.skipLiteral(b, &i, "null") { return false }
                switch key {
                case "user_ids":
                    if null { return true }
                    userIDs = JSONScanner.strings(b, &i)
                    return userIDs != nil
                case "scope":
                    return null || string(b, &i, into: &scope)
                case "permission":
                    return null || string(b, &i, into: &permission)
                case "assignee":
                    // Present: null means "the rule with nobody assigned", unlike no key at all.
                    if null {
                        assignee = .some(nil)
                        return true
                    }
                    guard let value = JSONScanner.jsonString(b, &i) else { return false }
                    assignee = .some(value)
                    return true
                default:
                    failure = RequestBody.unknownMember(key, at: "recipients", in: NotificationBody.RecipientsBody.members)
                    return false
                }
            }
            guard read else { return nil }
            return NotificationBody.RecipientsBody(userIDs: userIDs, scope: scope, permission: permission, assignee: assignee)
        }

        private static func push(_ b: [UInt8], _ i: inout Int, _ failure: inout HTTPError?) -> NotificationBody.PushBody? {
            var policy: String?, ackWindow: Int?, type: String?
            var complete = true
            let read = JSONScanner.object(b, &i, distinctKeys: true) { key, i in
                if b[i] == UInt8(ascii: "n") {
                    guard NotificationBody.PushBody.members.names.contains(key) else {
                        failure = RequestBody.unknownMember(key, at: "push", in: NotificationBody.PushBody.members)
                        return false
                    }
                    return JSONScanner.skipLiteral(b, &i, "null")
                }
                let start = i
                let took: Bool
                switch key {
                case "policy": took = string(b, &i, into: &policy)
                case "type": took = string(b, &i, into: &type)
                case "ack_window_ms":
                    let value = wholeNumber(b, &i, "push.ack_window_ms", "ack_window_ms must be a whole number of milliseconds", &failure)
                    ackWindow = value.flatMap { Int(exactly: $0) }
                    took = ackWindow != nil
                default:
                    failure = RequestBody.unknownMember(key, at: "push", in: NotificationBody.PushBody.members)
                    return false
                }
                if took { return true }
                guard failure == nil else { return false }
                // Left to the decoder; the other members are still read for the number check.
                complete = false
                i = start
                return JSONScanner.skipValue(b, &i)
            }
            return read && complete ? NotificationBody.PushBody(policy: policy, ack_window_ms: ackWindow, type: type) : nil
        }
    }
}
