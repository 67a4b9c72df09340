import Testing
@testable import Realtime

@Suite struct WebSocketUTF8ValidatorTests {
    /// A byte sequence and how the validator must judge it: `failsAt` is the
    /// index of the first byte after which no valid continuation exists (nil
    /// if none), `complete` whether the whole sequence is valid UTF-8.
    struct Case: CustomTestStringConvertible, Sendable {
        let bytes: [UInt8]
        let failsAt: Int?
        let complete: Bool
        let note: String
        var testDescription: String { note }

        static func valid(_ bytes: [UInt8], _ note: String) -> Case { Case(bytes: bytes, failsAt: nil, complete: true, note: note) }
        static func truncated(_ bytes: [UInt8], _ note: String) -> Case { Case(bytes: bytes, failsAt: nil, complete: false, note: note) }
        static func invalid(_ bytes: [UInt8], at index: Int, _ note: String) -> Case {
            Case(bytes: bytes, failsAt: index, complete: false, note: note)
        }
    }

    static let kosme: [UInt8] = [0xCE, 0xBA, 0xE1, 0xBD, 0xB9, 0xCF, 0x83, 0xCE, 0xBC, 0xCE, 0xB5]

    static let cases: [Case] = [
        .valid([], "empty"),
        .valid(Array("Hello-µ@ßöäüàá-UTF-8!!".utf8), "Autobahn 6.2.1 mixed"),
        .valid(kosme, "Autobahn 6.5.1 κόσμε"),
        .invalid(kosme + [0xED, 0xA0, 0x80] + Array("edited".utf8), at: 12, "Autobahn 6.3.1 κόσμε + surrogate"),
        // First and last code points of each sequence length (6.7, 6.8).
        .valid([0x00], "U+0000"),
        .valid([0x7F], "U+007F"),
        .valid([0xC2, 0x80], "U+0080"),
        .valid([0xDF, 0xBF], "U+07FF"),
        .valid([0xE0, 0xA0, 0x80], "U+0800"),
        .valid([0xEF, 0xBF, 0xBF], "U+FFFF (noncharacter, still valid)"),
        .valid([0xF0, 0x90, 0x80, 0x80], "U+10000"),
        .valid([0xF4, 0x8F, 0xBF, 0xBF], "U+10FFFF"),
        // Around the surrogate range (6.10 other boundary conditions).
        .valid([0xED, 0x9F, 0xBF], "U+D7FF"),
        .valid([0xEE, 0x80, 0x80], "U+E000"),
        .valid([0xEF, 0xBF, 0xBD], "U+FFFD"),
        .valid([0xEF, 0xBF, 0xBE], "U+FFFE noncharacter"),
        .valid([0xF3, 0xBF, 0xBF, 0xBF], "U+FFFFF"),
        // Beyond U+10FFFF and 5/6-byte forms.
        .invalid([0xF4, 0x90, 0x80, 0x80], at: 1, "U+110000"),
        .invalid([0xF5, 0x80, 0x80, 0x80], at: 0, "F5 lead"),
        .invalid([0xF7, 0xBF, 0xBF, 0xBF], at: 0, "U+1FFFFF"),
        .invalid([0xF8, 0x88, 0x80, 0x80, 0x80], at: 0, "5-byte form"),
        .invalid([0xFC, 0x84, 0x80, 0x80, 0x80, 0x80], at: 0, "6-byte form"),
        .invalid([0xFB, 0xBF, 0xBF, 0xBF, 0xBF], at: 0, "5-byte max"),
        .invalid([0xFD, 0xBF, 0xBF, 0xBF, 0xBF, 0xBF], at: 0, "6-byte max"),
        // Unexpected continuation bytes (6.12).
        .invalid([0x80], at: 0, "lone 80"),
        .invalid([0xBF], at: 0, "lone BF"),
        .invalid([0x80, 0xBF], at: 0, "80 BF"),
        .invalid([0x61, 0x80, 0xBF, 0x80], at: 1, "a + continuation"),
        // Lonely start characters (6.13).
        .invalid([0xC0, 0x20], at: 0, "C0 space"),
        .invalid([0xC2, 0x20], at: 1, "C2 space"),
        .invalid([0xE0, 0x20], at: 1, "E0 space"),
        .invalid([0xE1, 0x80, 0x20], at: 2, "E1 80 space"),
        .invalid([0xF0, 0x20], at: 1, "F0 space"),
        .invalid([0xF1, 0x80, 0x80, 0x20], at: 3, "F1 80 80 space"),
        // Last byte missing (6.14).
        .truncated([0xC2], "2-byte missing 1"),
        .truncated([0xE0, 0xA0], "3-byte missing 1"),
        .truncated([0xE1], "3-byte missing 2"),
        .truncated([0xF0, 0x90, 0x80], "4-byte missing 1"),
        .truncated([0xF4, 0x8F], "4-byte missing 2"),
        .truncated(kosme + [0xF0], "κόσμε + lead"),
        .invalid([0xC2, 0xE0, 0xA0, 0x80], at: 1, "2-byte then 3-byte"),
        // Impossible bytes (6.17).
        .invalid([0xFE], at: 0, "FE"),
        .invalid([0xFF], at: 0, "FF"),
        .invalid([0xFE, 0xFE, 0xFF, 0xFF], at: 0, "FE FE FF FF"),
        // Overlong forms (6.9, 6.10).
        .invalid([0xC0, 0xAF], at: 0, "overlong '/' 2 bytes"),
        .invalid([0xE0, 0x80, 0xAF], at: 1, "overlong '/' 3 bytes"),
        .invalid([0xF0, 0x80, 0x80, 0xAF], at: 1, "overlong '/' 4 bytes"),
        .invalid([0xC1, 0xBF], at: 0, "max overlong 2 bytes"),
        .invalid([0xE0, 0x9F, 0xBF], at: 1, "max overlong 3 bytes"),
        .invalid([0xF0, 0x8F, 0xBF, 0xBF], at: 1, "max overlong 4 bytes"),
        .invalid([0xC0, 0x80], at: 0, "overlong NUL"),
        // Surrogates (6.11, 6.12).
        .invalid([0xED, 0xA0, 0x80], at: 1, "U+D800"),
        .invalid([0xED, 0xAD, 0xBF], at: 1, "U+DB7F"),
        .invalid([0xED, 0xAE, 0x80], at: 1, "U+DB80"),
        .invalid([0xED, 0xAF, 0xBF], at: 1, "U+DBFF"),
        .invalid([0xED, 0xB0, 0x80], at: 1, "U+DC00"),
        .invalid([0xED, 0xBE, 0x80], at: 1, "U+DF80"),
        .invalid([0xED, 0xBF, 0xBF], at: 1, "U+DFFF"),
        .invalid([0xED, 0xA0, 0x80, 0xED, 0xB0, 0x80], at: 1, "surrogate pair U+D800 U+DC00"),
        // ASCII runs long enough for the 8-byte fast path, with the bad byte
        // at various offsets.
        .valid(Array("0123456789abcdefghijklmnopqrstuv".utf8), "32 ASCII"),
        .invalid(Array("0123456789abcdef".utf8) + [0xFF] + Array("0123456789".utf8), at: 16, "FF after 16 ASCII"),
        .invalid(Array("0123456789a".utf8) + [0x80], at: 11, "80 after 11 ASCII"),
        .valid(Array("01234567".utf8) + [0xC3, 0xA9] + Array("0123456789abcdef".utf8), "é amid ASCII"),
    ]

    @Test(arguments: cases)
    func wholeInput(_ c: Case) {
        var validator = UTF8Validator()
        let ok = c.bytes.withUnsafeBytes { validator.feed($0) }
        #expect(ok == (c.failsAt == nil))
        #expect(validator.isComplete == c.complete)
        #expect(c.bytes.withUnsafeBytes { UTF8Validator.isValid($0) } == c.complete)
        // Cross-check the table against the standard library's validator.
        #expect((String(validating: c.bytes, as: UTF8.self) != nil) == c.complete)
    }

    @Test(arguments: cases)
    func byteByByteFailsAtTheFirstImpossibleByte(_ c: Case) {
        var validator = UTF8Validator()
        var failedAt: Int?
        for (i, byte) in c.bytes.enumerated() {
            if !validator.feed([byte]) {
                failedAt = i
                break
            }
        }
        #expect(failedAt == c.failsAt)
        if c.failsAt == nil {
            #expect(validator.isComplete == c.complete)
        } else {
            // Rejection is sticky, even for bytes that would be fine alone.
            let stillFailing = !validator.feed([0x41])
            #expect(stillFailing)
            #expect(!validator.isComplete)
        }
    }

    @Test(arguments: cases)
    func everySplitGivesTheSameVerdict(_ c: Case) {
        for split in 0...c.bytes.count {
            var validator = UTF8Validator()
            let first = validator.feed(Array(c.bytes[..<split]))
            let second = validator.feed(Array(c.bytes[split...]))
            #expect((first && second) == (c.failsAt == nil), "split at \(split)")
            #expect(validator.isComplete == c.complete, "split at \(split)")
        }
    }

    @Test func resetClearsFailureAndPartialSequences() {
        var validator = UTF8Validator()
        let rejected = !validator.feed([0xFF])
        #expect(rejected)
        validator.reset()
        let accepted = validator.feed([0xE2, 0x82])
        #expect(accepted)
        #expect(!validator.isComplete)
        validator.reset()
        #expect(validator.isComplete)
        let loneContinuation = validator.feed([0xAC])
        #expect(!loneContinuation)
    }

    @Test func everyScalarIsAccepted() {
        var validator = UTF8Validator()
        var bytes: [UInt8] = []
        bytes.reserveCapacity(5_000_000)
        for value in UInt32(0)...0x10FFFF {
            guard let scalar = Unicode.Scalar(value) else { continue }
            bytes.append(contentsOf: String(scalar).utf8)
        }
        let accepted = validator.feed(bytes)
        #expect(accepted)
        #expect(validator.isComplete)
    }

    @Test func agreesWithTheStandardLibraryOnAllShortSequences() {
        // Every 1- and 2-byte sequence, and every 3-byte sequence whose lead
        // is E0–EF or a sample of others, against String(validating:).
        var disagreements = 0
        for a in 0...255 {
            for b in 0...255 {
                let seq = [UInt8(a), UInt8(b)]
                if UTF8Validator.check(seq) != (String(validating: seq, as: UTF8.self) != nil) { disagreements += 1 }
            }
        }
        for a in 0xE0...0xF4 {
            for b in 0x70...0xC5 {
                for c in 0x70...0xC5 {
                    let seq = [UInt8(a), UInt8(b), UInt8(c)]
                    if UTF8Validator.check(seq) != (String(validating: seq, as: UTF8.self) != nil) { disagreements += 1 }
                }
            }
        }
        var rng = WSSeededRandom(seed: 7)
        for _ in 0..<200_000 {
            let seq = (0..<4).map { i -> UInt8 in
                i == 0 ? UInt8.random(in: 0xE0...0xFF, using: &rng) : UInt8.random(in: 0x70...0xC5, using: &rng)
            }
            if UTF8Validator.check(seq) != (String(validating: seq, as: UTF8.self) != nil) { disagreements += 1 }
        }
        #expect(disagreements == 0)
    }
}

extension UTF8Validator {
    fileprivate static func check(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { isValid($0) }
    }
}
