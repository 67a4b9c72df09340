import HeraldCore
import PushHTTP

@testable import PushAPNs

/// The oracle of `APNsPayloadBytesTests`: the APNs body built as a `PushJSON` tree, as the send
/// path did before `APNsRequestBuilder.payloadBytes(for:)` wrote it straight into bytes (issue 17).
/// Nothing but the tests uses it, so it lives here, not in the provider.
extension APNsRequestBuilder {
    /// The JSON body (the layout in `APNsRequestBuilder`'s documentation) as a `PushJSON` tree:
    /// the reference `payloadBytes(for:)`, which requests use, is tested against.
    /// - Throws: `PushPayloadError.reservedDataKey("aps")` when a data key (or the root key) is `aps`.
    static func payload(for notification: PushNotification) throws(PushPayloadError) -> PushJSON {
        var aps: [String: PushJSON] = [:]
        switch notification.kind {
        case .alert:
            var alert: [String: PushJSON] = [:]
            if let title = notification.title { alert["title"] = .string(title) }
            if let subtitle = notification.subtitle { alert["subtitle"] = .string(subtitle) }
            if let body = notification.body { alert["body"] = .string(body) }
            if !alert.isEmpty { aps["alert"] = .object(alert) }
            if let sound = notification.sound { aps["sound"] = .string(sound) }
            if let badge = notification.badge { aps["badge"] = .int(Int64(badge)) }
            if let threadID = notification.threadID { aps["thread-id"] = .string(threadID) }
            if let level = notification.effectiveInterruptionLevel { aps["interruption-level"] = .string(level.rawValue) }
        case .wakeup:
            // Apple: content-available must not be combined with alert, badge or sound.
            aps["content-available"] = .int(1)
        }
        var root: [String: PushJSON] = [:]
        if let rootKey = notification.rootKey {
            root[rootKey] = .strings(notification.data)
        } else {
            for (key, value) in notification.data { root[key] = .string(value) }
        }
        if root["aps"] != nil { throw .reservedDataKey("aps") }
        root["aps"] = .object(aps)
        return .object(root)
    }
}
