/// Writes the bytes `PushJSON.bytes` would give, straight into one buffer: for a provider's body
/// built per push, where making the `PushJSON` tree first (a dictionary per object, then its keys
/// sorted and looked up again) cost more than the writing itself (issue 17: ~24k instructions an
/// APNs push at the choke point, where every notification's body is new).
///
/// The caller writes an object's keys in `PushJSON`'s order, by their UTF-8 bytes
/// (`precedes(_:_:)`); strings are escaped as `PushJSON` escapes them (RFC 8259 §7).
package struct PushJSONWriter {
    /// What was written so far.
    package private(set) var bytes: [UInt8]
    private var needsComma = false

    /// - Parameter capacity: bytes to reserve (the body's expected size; it grows past it if needed).
    package init(capacity: Int) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// Whether key `a` comes before key `b` in a `PushJSON` object (byte-wise, not `String <`).
    package static func precedes(_ a: String, _ b: String) -> Bool {
        a.utf8.lexicographicallyPrecedes(b.utf8)
    }

    /// `{`: an object starts.
    package mutating func beginObject() {
        bytes.append(UInt8(ascii: "{"))
        needsComma = false
    }

    /// `}`: the innermost open object ends; a member may follow it.
    package mutating func endObject() {
        bytes.append(UInt8(ascii: "}"))
        needsComma = true
    }

    /// `"name":`, after a comma when a member came before it; its value is written next.
    package mutating func key(_ name: String) {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
        PushJSON.append(string: name, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
    }

    /// A string value.
    package mutating func string(_ value: String) {
        PushJSON.append(string: value, to: &bytes)
        needsComma = true
    }

    /// A whole-number value, in `PushJSON.int`'s decimal form.
    package mutating func int(_ value: Int64) {
        bytes.append(contentsOf: String(value).utf8)
        needsComma = true
    }

    /// `values` as an object of strings, keys in `PushJSON`'s order: `PushJSON.strings(values)`.
    package mutating func strings(_ values: [String: String]) {
        beginObject()
        for (name, value) in Self.sorted(values) {
            key(name)
            string(value)
        }
        endObject()
    }

    /// The members of `values` in `PushJSON`'s key order.
    package static func sorted(_ values: [String: String]) -> [(key: String, value: String)] {
        // Most data maps hold a handful of keys: sorted as pairs, no second look-up by key.
        values.sorted { precedes($0.key, $1.key) }
    }
}
