import Foundation
import Testing

@testable import HeraldCore

/// `push.deliver` payloads are stored: a job queued by an older build must decode, and a
/// notification without the new optional keys must be stored byte for byte as before.
@Suite struct DeliveryJobPayloadTests {
    /// Exactly what the build before the provider port wrote (`NotificationPayload`, sorted keys).
    static let storedBeforeThePort = #"{"apns_id":"eabeae54-14a8-11e5-b60b-1697f925ec7b","device_id":"dev-1","notification":{"android_channel_id":"orders","badge":3,"body":"R$ 1.234,56 · Ana Souza","collapse_key":"order-paid-0199b7e2","data":{"kind":"orders.paid","order_id":"0199b7e2","url":"https://example.com/o/1"},"expires_at":1754566800,"kind":"alert","notification_count":4,"priority":"urgent","root_key":"herald","sound":"default","subtitle":"Loja Azul","tag":"t-1","thread_id":"store-0199a0c4","title":"Pedido #1042 pago","ttl_seconds":600},"origin":{"ack_event_id":"0-17","delivery_id":"d-1","notification_id":"n-1","session_id":"s-1","user_id":"u-1"}}"#

    static let expected = PushNotification(
        kind: .alert, title: "Pedido #1042 pago", subtitle: "Loja Azul", body: "R$ 1.234,56 · Ana Souza", sound: "default", badge: 3,
        threadID: "store-0199a0c4", collapseKey: "order-paid-0199b7e2",
        data: ["kind": "orders.paid", "order_id": "0199b7e2", "url": "https://example.com/o/1"], priority: .urgent, ttlSeconds: 600,
        expiresAt: 1_754_566_800, androidChannelID: "orders", tag: "t-1", notificationCount: 4, rootKey: "herald")

    @Test func decodesAJobStoredBeforeThePort() throws {
        let payload = try DeliveryJobPayload.decode(Self.storedBeforeThePort)
        #expect(payload.deviceID == "dev-1")
        #expect(payload.apnsID == "eabeae54-14a8-11e5-b60b-1697f925ec7b")
        #expect(payload.notification == Self.expected)
        #expect(payload.origin == .init(notificationID: "n-1", userID: "u-1", sessionID: "s-1", ackEventID: "0-17", deliveryID: "d-1"))
    }

    @Test func writesTheSameBytesAsBefore() throws {
        let payload = DeliveryJobPayload(deviceID: "dev-1", apnsID: try #require(PushID("EABEAE54-14A8-11E5-B60B-1697F925EC7B")),
                                         notification: Self.expected,
                                         origin: .init(notificationID: "n-1", userID: "u-1", sessionID: "s-1", ackEventID: "0-17", deliveryID: "d-1"))
        #expect(payload.jsonText() == Self.storedBeforeThePort)
    }

    @Test func minimalWakeupAndPlainPush() throws {
        let text = #"{"apns_id":"eabeae54-14a8-11e5-b60b-1697f925ec7b","device_id":"d","notification":{"collapse_key":"c","data":{"id":"1"},"kind":"wakeup","priority":"high"}}"#
        let payload = try DeliveryJobPayload.decode(text)
        #expect(payload.notification == .wakeup(data: ["id": "1"], collapseKey: "c"))
        #expect(payload.origin == nil)
        #expect(payload.jsonText() == text)
    }

    @Test func interruptionLevelIsKeptNow() throws {
        var notification = Self.expected
        notification.interruptionLevel = .passive
        let payload = DeliveryJobPayload(deviceID: "d", apnsID: .random(), notification: notification)
        #expect(payload.jsonText().contains(#""interruption_level":"passive""#))
        #expect(try DeliveryJobPayload.decode(payload.jsonText()).notification.interruptionLevel == .passive)
    }

    /// ADR 0020: the notification's id is stored with the job, so a resend after a restart carries
    /// the same one; a job stored before it reads back without one.
    @Test func theNotificationIDIsStoredAndReadBack() throws {
        var notification = Self.expected
        notification.notificationID = "push_01jf3k9q7m2x8c4v5b6n7"
        let payload = DeliveryJobPayload(deviceID: "d", apnsID: .random(), notification: notification)
        #expect(payload.jsonText().contains(#""notification_id":"push_01jf3k9q7m2x8c4v5b6n7""#))
        #expect(try DeliveryJobPayload.decode(payload.jsonText()).notification.notificationID == "push_01jf3k9q7m2x8c4v5b6n7")
        #expect(try DeliveryJobPayload.foundationDecode(payload.jsonText()) == payload)
        #expect(try DeliveryJobPayload.decode(Self.storedBeforeThePort).notification.notificationID == nil)
    }

    @Test func olderBuildsToleranceForKindAndPriorityStays() throws {
        let text = #"{"apns_id":"x","device_id":"d","notification":{"data":{},"kind":"carrier-pigeon","priority":"whenever"}}"#
        let notification = try DeliveryJobPayload.decode(text).notification
        #expect(notification.kind == .alert)
        #expect(notification.priority == .normal)
    }

    @Test func requiredKeysAreStillRequired() {
        #expect(throws: DecodingError.self) {
            try DeliveryJobPayload.decode(#"{"apns_id":"x","device_id":"d","notification":{"kind":"alert","priority":"normal"}}"#)
        }
    }

    // MARK: The hand-written text and its scanner (issue 17) agree with JSONEncoder/JSONDecoder

    /// Payloads that cover every optional member, escapes in the notification, and ids the
    /// splice must refuse (they go through JSONEncoder whole).
    static var variety: [DeliveryJobPayload] {
        let id = PushID("eabeae54-14a8-11e5-b60b-1697f925ec7b")!
        var tricky = expected
        tricky.title = "quote \" backslash \\ newline \n tab \t \u{1} slash / \u{2028} é"
        tricky.data = ["z": "1", "a\"b": "2", "k10": "x", "k9": "y", "A": "upper"]
        return [
            DeliveryJobPayload(deviceID: "dev-1", apnsID: id, notification: expected),
            DeliveryJobPayload(deviceID: "dev-1", apnsID: id, notification: tricky,
                               origin: .init(notificationID: "n-1", userID: "u-1", sessionID: nil), resends: 3),
            DeliveryJobPayload(deviceID: "dev-1", apnsID: id, notification: .wakeup(data: [:]),
                               origin: .init(notificationID: "n", userID: "u", sessionID: "s", ackEventID: "0-1", deliveryID: "d")),
            DeliveryJobPayload(deviceID: "dev \"quoted\"", apnsID: id, notification: expected),
            DeliveryJobPayload(deviceID: "d", apnsID: id, notification: expected,
                               origin: .init(notificationID: "n\nline", userID: "u", sessionID: nil)),
            DeliveryJobPayload(deviceID: "d", apnsID: id, notification: expected, origin: .init(notificationID: "n", userID: "u", sessionID: "s"),
                               resends: 0),
            // A plain push names its user (audience12), after any resends; one needing escapes too.
            DeliveryJobPayload(deviceID: "dev-1", apnsID: id, notification: expected, userID: "u-1"),
            DeliveryJobPayload(deviceID: "dev-1", apnsID: id, notification: expected, resends: 2, userID: "u \"q\""),
        ]
    }

    @Test func theSplicedTextIsJSONEncodersByteForByte() {
        for payload in Self.variety {
            #expect(payload.jsonText() == payload.foundationText())
            #expect(payload.jsonTextHandedOver() == payload.foundationText(), "a job leased at insert stores the same text")
        }
    }

    /// A job leased at insert reaches its sender as a value (ADR 0007): its notification's text
    /// is made as for any job, but not kept for a claim, which this process will not make for it.
    @Test func aTextHandedOverIsNotKeptForAClaim() throws {
        let cache = PayloadTextCache(recentCapacity: 8)
        var handed = Self.expected
        handed.data["notification_id"] = "ntf-handed"
        #expect(cache.text(of: handed, keptForClaim: false) == PayloadTextCache.encoderText(handed))
        #expect(cache.recentCount == 0)
        #expect(cache.text(of: handed) == PayloadTextCache.encoderText(handed), "the run's slot still gives it")
        var queued = Self.expected
        queued.data["notification_id"] = "ntf-queued"
        #expect(cache.text(of: queued) == PayloadTextCache.encoderText(queued))
        #expect(cache.recentCount == 1, "a queued job's text is kept for its claim")
        #expect(cache.notification(from: Substring(PayloadTextCache.encoderText(queued))) == queued)
    }

    @Test func theScannerReadsWhatJSONDecoderReads() throws {
        for payload in Self.variety {
            let text = payload.jsonText()
            #expect(try DeliveryJobPayload.decode(text) == DeliveryJobPayload.foundationDecode(text))
            #expect(try DeliveryJobPayload.decode(text) == payload)
        }
        // The same notification to many devices: read again from the cache, still equal.
        for device in ["a", "b", "c"] {
            let payload = DeliveryJobPayload(deviceID: device, apnsID: .random(), notification: Self.expected)
            #expect(try DeliveryJobPayload.decode(payload.jsonText()) == payload)
        }
    }

    /// The notification's text by hand (issue 17) is JSONEncoder's byte for byte, or nil. Fixed
    /// cases, then many drawn from alphabets with every kind of character that matters.
    @Test func theHandWrittenNotificationTextIsJSONEncoders() {
        var chokePoint = Self.expected
        chokePoint.data = ["kind": "bench.created", "notification_id": "ntf_0abc", "source": "bench"]
        #expect(chokePoint.handWrittenText() == PayloadTextCache.encoderText(chokePoint))
        #expect(Self.expected.handWrittenText() == PayloadTextCache.encoderText(Self.expected))
        let wakeup = PushNotification.wakeup(data: [:])
        #expect(wakeup.handWrittenText() == PayloadTextCache.encoderText(wakeup))
        var levelled = Self.expected
        levelled.interruptionLevel = .timeSensitive
        levelled.badge = -1
        #expect(levelled.handWrittenText() == PayloadTextCache.encoderText(levelled))
        var toTheMillisecond = Self.expected
        toTheMillisecond.expiresAtMilliseconds = 1_754_566_799_001
        #expect(toTheMillisecond.handWrittenText() == PayloadTextCache.encoderText(toTheMillisecond))
        #expect(toTheMillisecond.handWrittenText()?.contains(#""expires_at":1754566800,"expires_at_ms":1754566799001,"#) == true)
        // ADR 0020's notification id, between `notification_count` and `priority`.
        var named = Self.expected
        named.notificationID = "ntf_01jf3k9q7m2x8c4v5b6n7"
        #expect(named.handWrittenText() == PayloadTextCache.encoderText(named))
        #expect(named.handWrittenText()?.contains(#""notification_count":4,"notification_id":"ntf_01jf3k9q7m2x8c4v5b6n7","priority""#) == true)
        // Left to the encoder: escapes, and keys whose order could depend on the collation.
        for data in [["a_b": "1", "ab": "2"], ["k10": "x", "k9": "y"], ["A": "1", "a": "2"], ["q": "say \"hi\""]] {
            var other = Self.expected
            other.data = data
            #expect(other.handWrittenText() == nil, "\(data)")
        }
        var escaped = Self.expected
        escaped.title = "line\nbreak"
        #expect(escaped.handWrittenText() == nil)

        var generator = SystemRandomNumberGenerator()
        let keyAlphabet = Array("ab_z")
        let valueAlphabet = ["a", "Z", "/", "é", "·", " ", "1", "_", "\"", "\\", "\n", "\u{2028}", "😀"]
        func draw(_ alphabet: [String], _ count: Int) -> String { (0..<count).map { _ in alphabet.randomElement(using: &generator)! }.joined() }
        var written = 0
        for _ in 0..<500 {
            var n = Self.expected
            n.data = [:]
            for _ in 0..<Int.random(in: 0...4, using: &generator) {
                n.data[draw(keyAlphabet.map(String.init), Int.random(in: 0...4, using: &generator))] = draw(valueAlphabet, Int.random(in: 0...3, using: &generator))
            }
            n.title = Bool.random(using: &generator) ? nil : draw(valueAlphabet, 3)
            n.badge = Bool.random(using: &generator) ? nil : Int.random(in: -5...99_999, using: &generator)
            n.subtitle = Bool.random(using: &generator) ? nil : draw(valueAlphabet, 2)
            guard let text = n.handWrittenText() else { continue }
            written += 1
            #expect(text == PayloadTextCache.encoderText(n), "\(n)")
        }
        #expect(written > 50, "the draws reach the hand-written path")
    }

    /// The memo of texts written (issue 17): what it gives is what JSONDecoder reads from the
    /// text, each text is given once, the oldest go first, and nothing is kept once all were read.
    @Test func theWrittenTextsMemoGivesWhatDecodingWould() throws {
        let cache = PayloadTextCache(recentCapacity: 3)
        var notifications = Self.variety.map(\.notification)
        for index in 0..<3 {
            var one = Self.expected
            one.data["notification_id"] = "ntf-\(index)"     // the choke point: every text differs
            notifications.append(one)
        }
        for notification in notifications {
            let text = cache.text(of: notification)
            #expect(try JSONDecoder().decode(PushNotification.self, from: Data(text.utf8)) == notification,
                    "JSONEncoder's text reads back as the value the memo keeps")
        }
        #expect(cache.recentCount == 3, "at most its capacity, the newest")
        var first = Self.expected
        first.data["notification_id"] = "ntf-0"
        let firstText = cache.text(of: first)    // written again: still one entry
        #expect(cache.recentCount == 3)
        #expect(cache.notification(from: Substring(firstText)) == first)
        #expect(cache.recentCount == 2, "taken out when read")
        // The dropped oldest and the ones read are decoded: still the same values.
        for notification in notifications {
            #expect(cache.notification(from: Substring(cache.text(of: notification))) == notification)
        }
        #expect(cache.recentCount == 0, "every text read: nothing kept")
    }

    @Test func theScannerTakesOnlyItsOwnLayout() throws {
        let own = DeliveryJobPayload(deviceID: "d", apnsID: .random(), notification: Self.expected,
                                     origin: .init(notificationID: "n", userID: "u", sessionID: "s")).jsonText()
        #expect(PayloadScanner.read(own) != nil)
        // Other layouts are left to JSONDecoder, which reads them all the same.
        let others = [
            Self.storedBeforeThePort.replacingOccurrences(of: #""device_id":"dev-1","#, with: #""device_id":"dev-1" ,"#),
            #"{"device_id":"d","apns_id":"x","notification":{"data":{},"kind":"alert","priority":"normal"}}"#,
            #"{"apns_id":"x\u0041","device_id":"d","notification":{"data":{},"kind":"alert","priority":"normal"}}"#,
            #"{"apns_id":"x","device_id":"d","notification":{"data":{},"kind":"alert","priority":"normal"},"origin":{"user_id":"u","notification_id":"n","extra":"?"}}"#,
            #"{"apns_id":"x","device_id":"d","notification":{"data":{},"kind":"alert","priority":"normal"},"resends":12345678901}"#,
            #"{"apns_id":"x","device_id":"d","notification":{"data":{},"kind":"alert","priority":"normal"}} "#,
        ]
        for text in others {
            #expect(PayloadScanner.read(text) == nil, "\(text)")
            #expect(try DeliveryJobPayload.decode(text) == DeliveryJobPayload.foundationDecode(text))
        }
        // Broken text is JSONDecoder's to refuse, with its error.
        for text in [#"{"apns_id":"x","device_id":"d","notification":{"data":{}"#, #"{"apns_id":"x","device_id":"d","notification":{"kind":"alert","priority":"normal"}}"#] {
            #expect(PayloadScanner.read(text) == nil)
            #expect(throws: DecodingError.self) { try DeliveryJobPayload.decode(text) }
        }
    }
}
