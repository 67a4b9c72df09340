import Foundation
import Synchronization

/// The last notification a `push.deliver` payload was written with and read with, and their
/// texts. Pushes come in runs of one notification to many devices (`POST /v1/push` with 1,000
/// device ids, a notification to many recipients), so the notification is encoded once per run
/// when jobs are queued and decoded once per run when they are claimed, instead of once per job
/// (`JSONEncoder`/`JSONDecoder` cost ~70k instructions each per payload; a hit costs one
/// comparison).
///
/// A notification to one device each (the choke point: one recipient per call, every text
/// different by its notification id) has no runs, so the texts written last are also kept by text
/// (`recent`, at most `recentCapacity`): the worker claims a job moments after the API wrote it,
/// and finds its notification there instead of decoding it (~63k instructions per push, issue
/// 17). A text is taken out when read, so the memo holds the jobs written and not yet claimed,
/// the oldest dropped first; a job claimed later, or by another process, is decoded as before.
/// `JSONDecoder` reads a text `JSONEncoder` wrote from a `PushNotification` back as that value
/// (strings, whole numbers, raw values and a string map; tested), so a hit gives what decoding
/// would.
///
/// # Thread safety
/// A `Mutex` guards each slot and the memo; the slow work (encoding, decoding) runs outside them.
final class PayloadTextCache: Sendable {
    static let shared = PayloadTextCache()

    /// Texts written and not read yet that `recent` keeps: about the jobs a worker lags behind
    /// the API by (`PushBacklog`'s default limit) and one claim more; ~0.6 KB each.
    static let recentCapacity = 2_048

    /// Notifications by their stored text, oldest first out of `order` (a ring of their texts).
    struct Recent {
        var byText: [String: PushNotification] = [:]
        var order: [String] = []
        var next = 0
    }

    private let encoded = Mutex<(notification: PushNotification, text: String)?>(nil)
    private let decoded = Mutex<(text: Substring, notification: PushNotification)?>(nil)
    private let recent = Mutex(Recent())
    private let capacity: Int

    /// - Parameter recentCapacity: texts `recent` keeps (tests make it small).
    init(recentCapacity: Int = PayloadTextCache.recentCapacity) {
        capacity = max(1, recentCapacity)
    }

    /// The notification's stored form, `JSONEncoder` with sorted keys and unescaped slashes.
    /// - Parameter keptForClaim: whether a claim may read a job with this text here (the text
    ///   goes into `recent` when it is made); false for a job handed to its sender as a value.
    func text(of notification: PushNotification, keptForClaim: Bool = true) -> String {
        if let prepared = notification.preparedStoredText {
            if keptForClaim { remember(prepared, notification) }
            return prepared
        }
        let hit = encoded.withLock { slot -> String? in
            guard let kept = slot, kept.notification == notification else { return nil }
            // Equal, maybe another copy (an earlier request's, e.g. the same notification sent
            // again): this one is kept, so the rest of its run compares by identity
            // (`PushNotification`'s shared box, issue 17: 1k instructions a push field by field).
            slot = (notification, kept.text)
            return kept.text
        }
        if let hit { return hit }
        let text = notification.handWrittenText() ?? Self.encoderText(notification)
        encoded.withLock { $0 = (notification, text) }
        if keptForClaim { remember(text, notification) }
        return text
    }

    /// `JSONEncoder`'s text of `notification`: what `handWrittenText()` must equal, and what is
    /// written when it cannot be.
    static func encoderText(_ notification: PushNotification) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding strings, numbers and a string dictionary cannot fail.
        return String(decoding: (try? encoder.encode(notification)) ?? Data("{}".utf8), as: UTF8.self)
    }

    /// The notification stored as `text`, or nil when `JSONDecoder` cannot read it.
    func notification(from text: Substring) -> PushNotification? {
        if let hit = decoded.withLock({ $0.flatMap { $0.text == text ? $0.notification : nil } }) { return hit }
        let key = String(text)
        let notification: PushNotification
        let written = recent.withLock { recent -> PushNotification? in
            let found = recent.byText.removeValue(forKey: key)
            // Every text written was read: the ring's copies go too, so an idle process keeps none.
            if found != nil, recent.byText.isEmpty { recent = Recent() }
            return found
        }
        if let written {
            notification = written
        } else {
            guard let read = try? JSONDecoder().decode(PushNotification.self, from: Data(text.utf8)) else { return nil }
            notification = read
        }
        decoded.withLock { $0 = (text, notification) }
        return notification
    }

    /// Texts `recent` holds now (tests).
    var recentCount: Int { recent.withLock { $0.byText.count } }

    private func remember(_ text: String, _ notification: PushNotification) {
        recent.withLock { recent in
            if recent.order.count < capacity {
                recent.order.append(text)
            } else {
                // The oldest text out, unless it was read meanwhile and written again since
                // (then the ring holds it twice and this drop only costs that job a decode).
                recent.byText.removeValue(forKey: recent.order[recent.next])
                recent.order[recent.next] = text
                recent.next = (recent.next + 1) % capacity
            }
            recent.byText[text] = notification
        }
    }
}

/// Reads the exact layout `DeliveryJobPayload.jsonText()` writes:
///
/// ```
/// {"apns_id":"…","device_id":"…","notification":{…}[,"origin":{"key":"value",…}][,"resends":N][,"user_id":"…"]}
/// ```
/// with ids that hold no escapes. Anything else — whitespace, another key order, an escape in an
/// id, a key it does not know, a `null` — makes it give up (nil), and `JSONDecoder` reads the
/// text instead: this is a shortcut for Herald's own text, never a second JSON dialect.
enum PayloadScanner {
    /// Whether `value` can stand in a JSON string as is, exactly as `JSONEncoder` writes it: no
    /// control character, quote or backslash, and no lead byte 0xE2 (U+2028/2029 and their
    /// neighbours; encoders differ on those, so they take the encoder's path).
    static func isPlain(_ value: String) -> Bool {
        // Over the contiguous bytes (issue 17): `utf8.contains` stepped a String index per byte,
        // ~1.3k instructions for an id of 36 bytes, twice a push.
        var value = value
        return value.withUTF8 { bytes in
            for byte in bytes where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte == 0xE2 {
                return false
            }
            return true
        }
    }

    /// The payload, or nil when `text` is not in the layout above.
    static func read(_ text: String) -> DeliveryJobPayload? {
        let utf8 = text.utf8
        var i = utf8.startIndex
        func expect(_ literal: StaticString) -> Bool {
            var j = i
            let ok = literal.withUTF8Buffer { bytes in
                for byte in bytes {
                    guard j < utf8.endIndex, utf8[j] == byte else { return false }
                    j = utf8.index(after: j)
                }
                return true
            }
            if ok { i = j }
            return ok
        }
        /// A string's body up to its closing quote (consumed); nil at an escape or a control byte.
        func plainString() -> String? {
            let start = i
            while i < utf8.endIndex {
                let byte = utf8[i]
                if byte == UInt8(ascii: "\"") {
                    let value = String(text[start..<i])
                    i = utf8.index(after: i)
                    return value
                }
                if byte == UInt8(ascii: "\\") || byte < 0x20 { return nil }
                i = utf8.index(after: i)
            }
            return nil
        }
        guard expect(#"{"apns_id":""#), let apnsID = plainString(),
              expect(#","device_id":""#), let deviceID = plainString(),
              expect(#","notification":"#), let end = objectEnd(utf8, from: i),
              let notification = PayloadTextCache.shared.notification(from: text[i..<end]) else { return nil }
        i = end
        var origin: DeliveryJobPayload.Origin?
        if expect(#","origin":{"#) {
            var fields: [String: String] = [:]
            if !expect("}") {
                repeat {
                    guard expect("\""), let key = plainString(), expect(":\""), let value = plainString() else { return nil }
                    fields[key] = value
                } while expect(",")
                guard expect("}") else { return nil }
            }
            let known: Set<String> = ["ack_event_id", "delivery_id", "notification_id", "session_id", "user_id"]
            guard fields.keys.allSatisfy(known.contains), let notificationID = fields["notification_id"],
                  let userID = fields["user_id"] else { return nil }
            origin = .init(notificationID: notificationID, userID: userID, sessionID: fields["session_id"],
                           ackEventID: fields["ack_event_id"], deliveryID: fields["delivery_id"])
        }
        var resends: Int?
        if expect(#","resends":"#) {
            var value = 0, digits = 0
            while i < utf8.endIndex, let digit = utf8[i].asciiDigit, digits < 9 {
                value = value * 10 + digit
                digits += 1
                i = utf8.index(after: i)
            }
            guard digits > 0 else { return nil }
            resends = value
        }
        var userID: String?
        if expect(#","user_id":""#) {
            guard let value = plainString() else { return nil }
            userID = value
        }
        guard expect("}"), i == utf8.endIndex else { return nil }
        return DeliveryJobPayload(deviceID: deviceID, storedAPNsID: apnsID, notification: notification, origin: origin,
                                  resends: resends, userID: userID)
    }

    /// The index just past the JSON object starting at `start` (strings and escapes skipped), or
    /// nil when there is none.
    private static func objectEnd(_ utf8: String.UTF8View, from start: String.Index) -> String.Index? {
        guard start < utf8.endIndex, utf8[start] == UInt8(ascii: "{") else { return nil }
        var depth = 0, inString = false, escaped = false
        var i = start
        while i < utf8.endIndex {
            let byte = utf8[i]
            i = utf8.index(after: i)
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                depth -= 1
                if depth == 0 { return i }
            default: break
            }
        }
        return nil
    }
}

private extension UInt8 {
    var asciiDigit: Int? {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) ? Int(self - UInt8(ascii: "0")) : nil
    }
}
