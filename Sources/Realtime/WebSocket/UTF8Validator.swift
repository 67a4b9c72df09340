/// Incremental, fail-fast UTF-8 validator (RFC 3629), used for WebSocket text
/// messages and close reasons (RFC 6455 §5.6, §8.1).
///
/// RFC 6455 §8.1 requires failing the connection as soon as the bytes can no
/// longer be valid UTF-8, which may be in the middle of a frame or in an early
/// fragment of a long message. So validation is a byte-at-a-time state
/// machine whose state survives across calls, rather than a check of the whole
/// message at the end.
///
/// The automaton is Björn Höhrmann's UTF-8 DFA
/// (http://bjoern.hoehrmann.de/utf-8/decoder/dfa/, MIT licence), reduced to
/// validation: the code point itself is never assembled. It rejects overlong
/// forms, UTF-16 surrogates (U+D800–U+DFFF) and values above U+10FFFF at the
/// first byte that rules them out, which is what Autobahn's 6.x cases check.
public struct UTF8Validator: Sendable {
    /// 0 is the accepting state (between sequences); 12 is the sticky reject
    /// state. Other multiples of 12 are "inside a sequence".
    private var state: UInt8 = Self.accept

    private static let accept: UInt8 = 0
    private static let reject: UInt8 = 12

    /// Creates a validator that has seen no bytes.
    public init() {}

    /// True when the bytes fed so far end on a character boundary, so the
    /// message may end here. A message that ends while this is false is
    /// truncated and therefore invalid (RFC 6455 §8.1).
    public var isComplete: Bool { state == Self.accept }

    /// True once some byte ruled out valid UTF-8; stays true until ``reset()``.
    public var hasFailed: Bool { state == Self.reject }

    /// Forgets all input, e.g. between messages.
    public mutating func reset() {
        state = Self.accept
    }

    /// Feeds the next bytes of the stream. Returns false as soon as the bytes
    /// seen so far cannot be the prefix of valid UTF-8; once false, it stays
    /// false until ``reset()``.
    public mutating func feed(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var s = state
        if s == Self.reject { return false }
        let count = bytes.count
        guard count > 0, let base = bytes.baseAddress else { return true }
        var i = 0
        Self.table.withUnsafeBufferPointer { table in
            while i < count {
                // Text is overwhelmingly ASCII: between sequences, skip 8 ASCII
                // bytes per step instead of two table lookups per byte.
                if s == Self.accept {
                    while i + 8 <= count,
                          base.loadUnaligned(fromByteOffset: i, as: UInt64.self) & 0x8080_8080_8080_8080 == 0 {
                        i += 8
                    }
                    if i == count { break }
                }
                let byte = base.load(fromByteOffset: i, as: UInt8.self)
                let type = table[Int(byte)]
                s = table[256 + Int(s) + Int(type)]
                if s == Self.reject { break }
                i += 1
            }
        }
        state = s
        return s != Self.reject
    }

    /// Same as the raw-buffer overload, for arrays.
    public mutating func feed(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { feed($0) }
    }

    /// Whether `bytes` is, in full, valid UTF-8.
    public static func isValid(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var validator = UTF8Validator()
        return validator.feed(bytes) && validator.isComplete
    }

    /// Höhrmann's table: 256 byte→character-class entries, then the
    /// state×class transition table (states are pre-multiplied by 12 so a
    /// transition is one addition and one load).
    private static let table: [UInt8] = [
        // 0x00-0x7F: ASCII
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        // 0x80-0x8F, 0x90-0x9F: continuation bytes, split so E0/ED/F0/F4 can
        // restrict their second byte's range
        1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9,
        // 0xA0-0xBF: continuation bytes
        7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
        // 0xC0-0xC1: overlong 2-byte leads (class 8 = invalid); 0xC2-0xDF: 2-byte leads
        8, 8, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
        // 0xE0 (overlong risk), 0xE1-0xEC, 0xED (surrogate risk), 0xEE-0xEF;
        // 0xF0 (overlong risk), 0xF1-0xF3, 0xF4 (> U+10FFFF risk), 0xF5-0xFF invalid
        10, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 4, 3, 3, 11, 6, 6, 6, 5, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8,
        // Transitions: row = state / 12, column = character class 0...11.
        0, 12, 24, 36, 60, 96, 84, 12, 12, 12, 48, 72, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12,
        12, 0, 12, 12, 12, 12, 12, 0, 12, 0, 12, 12, 12, 24, 12, 12, 12, 12, 12, 24, 12, 24, 12, 12,
        12, 12, 12, 12, 12, 12, 12, 24, 12, 12, 12, 12, 12, 24, 12, 12, 12, 12, 12, 12, 12, 24, 12, 12,
        12, 12, 12, 12, 12, 12, 12, 36, 12, 36, 12, 12, 12, 36, 12, 12, 12, 12, 12, 36, 12, 36, 12, 12,
        12, 36, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12,
    ]
}
