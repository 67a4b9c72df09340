import Realtime

/// A fast path for `POST /v1/push` bodies (PU-5): `JSONSerialization` (the unknown-member check)
/// and `JSONDecoder` over a call of 1,000 device ids were ~7k instructions a push (issue 17).
/// One pass over the bytes instead.
///
/// It runs only after `JSONSyntax.check` accepted the bytes. It takes a body only when every
/// member is one `PushRoutes.SendBody` names, with the type its `Decodable` expects (`null` for
/// an optional member is its absence, as `decodeIfPresent` reads it), and gives what the decoder
/// would give (a whole number however written, `1e3`, as ADR 0029 reads it). Anything else (an
/// unknown member, a wrong type, a number with a fractional part, a missing `notification`) returns nil, and `RequestBody.decode` reads the body again
/// and names the field in its 400: the errors stay the decoder's.
enum PushBodyScanner {
    /// - Returns: the body, or nil for the decoder to read it.
    static func scan(_ b: [UInt8]) -> PushRoutes.SendBody? {
        var i = JSONScanner.skipSpace(b, 0)
        var userID: String?, deviceIDs: [String]?, notification: PushRoutes.NotificationBody?
        let read = JSONScanner.object(b, &i) { key, i in
            if isNull(b, &i) { return key == "user_id" || key == "device_ids" }
            switch key {
            case "user_id":
                userID = JSONScanner.jsonString(b, &i)
                return userID != nil
            case "device_ids":
                deviceIDs = JSONScanner.strings(b, &i)
                return deviceIDs != nil
            case "notification":
                notification = Self.notification(b, &i)
                return notification != nil
            default:
                return false
            }
        }
        guard read, JSONScanner.skipSpace(b, i) == b.count, let notification else { return nil }
        return PushRoutes.SendBody(user_id: userID, device_ids: deviceIDs, notification: notification)
    }

    /// Past a `null` at `i`, if there is one there.
    private static func isNull(_ b: [UInt8], _ i: inout Int) -> Bool {
        i < b.count && b[i] == UInt8(ascii: "n") && JSONScanner.skipLiteral(b, &i, "null")
    }

    /// The `notification` object; nil for the decoder to read it.
    private static func notification(_ b: [UInt8], _ i: inout Int) -> PushRoutes.NotificationBody? {
        var kind, title, subtitle, body, sound, priority, collapseKey, threadID, androidChannelID: String?
        var badge, ttlSeconds: Int?
        var data: [String: String]?
        func string(_ i: inout Int, into field: inout String?) -> Bool {
            field = JSONScanner.jsonString(b, &i)
            return field != nil
        }
        func integer(_ i: inout Int, into field: inout Int?) -> Bool {
            field = JSONScanner.wholeNumber(b, &i).flatMap { Int(exactly: $0) }
            return field != nil
        }
        let read = JSONScanner.object(b, &i) { key, i in
            // Every member is optional: a null is its absence, for a member the body names.
            if isNull(b, &i) { return PushRoutes.NotificationBody.members.names.contains(key) }
            switch key {
            case "kind": return string(&i, into: &kind)
            case "title": return string(&i, into: &title)
            case "subtitle": return string(&i, into: &subtitle)
            case "body": return string(&i, into: &body)
            case "sound": return string(&i, into: &sound)
            case "priority": return string(&i, into: &priority)
            case "collapse_key": return string(&i, into: &collapseKey)
            case "thread_id": return string(&i, into: &threadID)
            case "android_channel_id": return string(&i, into: &androidChannelID)
            case "badge": return integer(&i, into: &badge)
            case "ttl_seconds": return integer(&i, into: &ttlSeconds)
            case "data":
                data = JSONScanner.stringMap(b, &i)
                return data != nil
            default: return false
            }
        }
        guard read else { return nil }
        return PushRoutes.NotificationBody(kind: kind, title: title, subtitle: subtitle, body: body, sound: sound, badge: badge, data: data,
                                           priority: priority, ttl_seconds: ttlSeconds, collapse_key: collapseKey, thread_id: threadID,
                                           android_channel_id: androidChannelID)
    }
}
