import HeraldCore
import PushHTTP
import PushTestSupport
import Testing

@testable import PushAPNs

/// `APNsRequestBuilder.payloadBytes(for:)`, the body requests send, against `payload(for:).bytes`,
/// the `PushJSON` tree it replaced on the send path (issue 17): the same bytes for every shape, the
/// same refusal.
@Suite struct APNsPayloadBytesTests {
    /// Data keys on both sides of `aps` in byte order (`_` and upper case sort before lower case,
    /// `é` after), and strings that need escapes.
    static let data: [String: String] = [
        "a": "1", "apr": "x", "apsx": "y", "apt": "z", "b": "q\"uote", "Zed": "tab\tline\n", "_u": "é/ü", "é": "\u{1}",
        "kind": "orders.paid",
    ]

    static var shapes: [PushNotification] {
        var shapes: [PushNotification] = [
            .seed001,
            PushNotification(),
            PushNotification(title: "t"),
            PushNotification(body: "only a body"),
            PushNotification(subtitle: "s"),
            PushNotification(title: "", subtitle: "", body: ""),
            PushNotification(title: "T \"q\" \\ é", subtitle: "sub", body: "B\nline", sound: "default", badge: 0, threadID: "th",
                             data: data, priority: .urgent),
            PushNotification(title: "t", badge: -3, data: data, interruptionLevel: .passive),
            PushNotification(title: "t", badge: 1_234_567, data: ["z": "last"], priority: .high),
            .wakeup(data: data),
            .wakeup(data: [:]),
        ]
        // A root key before `aps`, after it, a prefix of it, one that extends it, and upper case.
        for rootKey in ["a", "ap", "apsx", "app", "zz", "Herald", "é"] {
            shapes.append(PushNotification(title: "t", body: "b", badge: 2, data: data, rootKey: rootKey))
            shapes.append(.wakeup(data: data, rootKey: rootKey))
            shapes.append(PushNotification(title: "t", data: [:], rootKey: rootKey))
        }
        return shapes
    }

    @Test func bytesEqualThePushJSONTree() throws {
        for notification in Self.shapes {
            let reference = try APNsRequestBuilder.payload(for: notification).bytes
            let written = try APNsRequestBuilder.payloadBytes(for: notification)
            #expect(String(decoding: written, as: UTF8.self) == String(decoding: reference, as: UTF8.self))
        }
    }

    @Test func aDataKeyOrRootKeyNamedAPSIsRefusedByBoth() {
        let refused = [
            PushNotification(title: "t", data: ["aps": "x"]),
            PushNotification.wakeup(data: ["aps": "x", "b": "y"]),
            PushNotification(title: "t", data: ["k": "v"], rootKey: "aps"),
        ]
        for notification in refused {
            #expect(throws: PushPayloadError.reservedDataKey("aps")) { try APNsRequestBuilder.payload(for: notification) }
            #expect(throws: PushPayloadError.reservedDataKey("aps")) { try APNsRequestBuilder.payloadBytes(for: notification) }
        }
        // Under a root key, `aps` among the data is the app's own key, not APNs's.
        let nested = PushNotification(title: "t", data: ["aps": "x"], rootKey: "herald")
        #expect(throws: Never.self) { try APNsRequestBuilder.payloadBytes(for: nested) }
        #expect((try? APNsRequestBuilder.payloadBytes(for: nested)) == (try? APNsRequestBuilder.payload(for: nested).bytes))
    }
}
