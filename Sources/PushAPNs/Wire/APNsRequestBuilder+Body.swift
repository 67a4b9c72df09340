import HeraldCore
import PushHTTP

extension APNsRequestBuilder {
    /// The JSON body (the layout in `APNsRequestBuilder`'s documentation), written at once: at
    /// the choke point every notification's body is new, and the `PushJSON` tree with its
    /// dictionaries, then its keys sorted and looked up again, was ~24k instructions a push
    /// (issue 17). That tree stays the reference it is tested against, in the test target
    /// (`APNsPayloadBytesTests`).
    /// - Throws: `PushPayloadError.reservedDataKey("aps")` when a data key (or the root key) is `aps`.
    static func payloadBytes(for notification: PushNotification) throws(PushPayloadError) -> [UInt8] {
        let data = notification.data
        let rootKey = notification.rootKey
        if rootKey == "aps" || (rootKey == nil && data["aps"] != nil) { throw .reservedDataKey("aps") }
        let title = notification.title, subtitle = notification.subtitle, body = notification.body
        let sound = notification.sound, threadID = notification.threadID
        var room = 64 + (title?.utf8.count ?? 0) + (subtitle?.utf8.count ?? 0) + (body?.utf8.count ?? 0)
            + (sound?.utf8.count ?? 0) + (threadID?.utf8.count ?? 0) + (rootKey?.utf8.count ?? 0)
        for (key, value) in data { room += key.utf8.count + value.utf8.count + 6 }
        var out = PushJSONWriter(capacity: room)

        func writeAPS() {
            out.key("aps")
            out.beginObject()
            switch notification.kind {
            case .alert:
                // Keys in byte order: alert, badge, interruption-level, sound, thread-id.
                if title != nil || subtitle != nil || body != nil {
                    out.key("alert")
                    out.beginObject()
                    if let body { out.key("body"); out.string(body) }
                    if let subtitle { out.key("subtitle"); out.string(subtitle) }
                    if let title { out.key("title"); out.string(title) }
                    out.endObject()
                }
                if let badge = notification.badge { out.key("badge"); out.int(Int64(badge)) }
                if let level = notification.effectiveInterruptionLevel { out.key("interruption-level"); out.string(level.rawValue) }
                if let sound { out.key("sound"); out.string(sound) }
                if let threadID { out.key("thread-id"); out.string(threadID) }
            case .wakeup:
                // Apple: content-available must not be combined with alert, badge or sound.
                out.key("content-available")
                out.int(1)
            }
            out.endObject()
        }

        out.beginObject()
        if let rootKey {
            let apsFirst = PushJSONWriter.precedes("aps", rootKey)
            if apsFirst { writeAPS() }
            out.key(rootKey)
            out.strings(data)
            if !apsFirst { writeAPS() }
        } else {
            var apsWritten = false
            for (key, value) in PushJSONWriter.sorted(data) {
                if !apsWritten, PushJSONWriter.precedes("aps", key) {
                    writeAPS()
                    apsWritten = true
                }
                out.key(key)
                out.string(value)
            }
            if !apsWritten { writeAPS() }
        }
        out.endObject()
        return out.bytes
    }
}
