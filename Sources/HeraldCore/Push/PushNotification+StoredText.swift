extension PushNotification {
    /// The stored form (`PayloadTextCache.text(of:)`) written by hand: byte for byte what
    /// `JSONEncoder` with `.sortedKeys` and `.withoutEscapingSlashes` writes, or nil when this
    /// notification is one the encoder must write itself.
    ///
    /// Why: every notification to one device is its own text (its notification id is in `data`),
    /// and the encoder cost ~50k instructions per push at the choke point (issue 17).
    ///
    /// nil (the encoder decides) when a string would need an escape (`PayloadScanner.isPlain`),
    /// or when the data's keys are not all lower-case letters and `_` or two of them first differ
    /// at a `_`: the encoder's key order is Foundation's, and for such keys every plausible order
    /// (by bytes, case-insensitive, numeric) is the same as the byte order used here. The fixed
    /// keys are in that order already.
    func handWrittenText() -> String? {
        // Sorted as pairs: sorting the keys, then looking each one up again, hashed every key
        // twice (issue 17: ~1k instructions a push, on the writer at the choke point).
        let entries = data.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
        guard Self.keysSortAlike(entries) else { return nil }
        // Bytes, made a `String` once: ~45 `String` appends cost ~15k instructions a push (issue 17).
        var out = JSONWriter(capacity: 160 + data.count * 48 + (title?.utf8.count ?? 0) + (body?.utf8.count ?? 0))
        var empty = true
        func key(_ name: StaticString) {
            out.raw(empty ? "{" : ",")
            empty = false
            out.raw(name)
        }
        func string(_ name: StaticString, _ value: String?) -> Bool {
            guard let value else { return true }
            key(name)
            return out.plainQuoted(value)
        }
        func number(_ name: StaticString, _ value: Int?) {
            guard let value else { return }
            key(name)
            out.number(value)
        }
        guard string(#""android_channel_id":"#, androidChannelID) else { return nil }
        number(#""badge":"#, badge)
        guard string(#""body":"#, body), string(#""collapse_key":"#, collapseKey) else { return nil }
        key(#""data":{"#)
        for (index, (name, value)) in entries.enumerated() {
            if index > 0 { out.raw(",") }
            guard out.plainQuoted(name) else { return nil }
            out.raw(":")
            guard out.plainQuoted(value) else { return nil }
        }
        out.raw("}")
        number(#""expires_at":"#, expiresAt)
        number(#""expires_at_ms":"#, expiresAtMilliseconds)
        guard string(#""interruption_level":"#, interruptionLevel?.rawValue), string(#""kind":"#, kind.rawValue) else { return nil }
        number(#""notification_count":"#, notificationCount)
        guard string(#""notification_id":"#, notificationID), string(#""priority":"#, priority.rawValue), string(#""root_key":"#, rootKey), string(#""sound":"#, sound),
              string(#""subtitle":"#, subtitle), string(#""tag":"#, tag), string(#""thread_id":"#, threadID),
              string(#""title":"#, title) else { return nil }
        number(#""ttl_seconds":"#, ttlSeconds)
        out.raw("}")
        return out.text
    }

    /// Whether the keys of `entries` (sorted by bytes) are lower-case letters and `_` only, no two
    /// first differing where one has `_` (where collations could disagree).
    private static func keysSortAlike(_ entries: [(key: String, value: String)]) -> Bool {
        // Over each key's contiguous bytes: stepping `utf8` by index was ~1.5k instructions a push.
        var previous: [UInt8] = []
        for entry in entries {
            var key = entry.key
            let alike = key.withUTF8 { utf8 -> Bool in
                for byte in utf8 where !((byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || byte == UInt8(ascii: "_")) {
                    return false
                }
                for (a, b) in zip(previous, utf8) where a != b {
                    if a == UInt8(ascii: "_") || b == UInt8(ascii: "_") { return false }
                    break
                }
                previous.removeAll(keepingCapacity: true)
                previous.append(contentsOf: utf8)
                return true
            }
            guard alike else { return false }
        }
        return true
    }
}
