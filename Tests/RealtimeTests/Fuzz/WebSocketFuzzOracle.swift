import FuzzSupport
@testable import Realtime

/// The invariants of the WebSocket frame parser on any client bytes, shared by the seeded loop
/// (`RealtimeFuzzTests`) and `scripts/fuzz websocket-frames`:
/// - it returns or throws, never traps, and nothing follows a Close;
/// - the events and the error do not depend on how the bytes are chunked;
/// - messages honour the size limit, control payloads RFC 6455 §5.5's 125 bytes, text and close
///   reasons are what the strict UTF-8 oracle (`String(validating:)`) accepts;
/// - the events, framed again as masked client frames, parse to the same events.
enum WebSocketFuzzOracle {
    static let maxMessageBytes = 1024

    struct Outcome: Equatable {
        var events: [WebSocketEvent] = []
        var error: WebSocketProtocolError?
    }

    static func run(_ chunks: [[UInt8]]) -> Outcome {
        var parser = WebSocketFrameParser(maxMessageBytes: maxMessageBytes)
        var outcome = Outcome()
        for chunk in chunks {
            parser.append(chunk)
            do {
                while let event = try parser.next() { outcome.events.append(event) }
            } catch {
                outcome.error = error
                return outcome
            }
        }
        return outcome
    }

    static func check(_ input: [UInt8]) -> (failure: String?, keep: Bool) {
        let whole = run([input])
        var rng = FuzzRandom(hashing: input)
        for maxPiece in [1, 5, 200] where maxPiece > 1 || input.count <= 1024 {
            let pieces = run(fuzzChunks(input, maxPiece: maxPiece, using: &rng))
            if pieces != whole { return ("pieces of ≤ \(maxPiece) bytes: \(pieces); at once: \(whole)", false) }
        }
        for (index, event) in whole.events.enumerated() {
            switch event {
            case .text(let text):
                guard text.utf8.count <= maxMessageBytes else { return ("text of \(text.utf8.count) bytes", false) }
            case .binary(let bytes):
                guard bytes.count <= maxMessageBytes else { return ("binary of \(bytes.count) bytes", false) }
            case .ping(let payload), .pong(let payload):
                guard payload.count <= 125 else { return ("control payload of \(payload.count) bytes", false) }
            case .close(let code, let reason):
                guard index == whole.events.count - 1 else { return ("events after a close", false) }
                guard reason.utf8.count <= 123 else { return ("close reason of \(reason.utf8.count) bytes", false) }
                if let code, !WebSocketCloseCode.isValidOnWire(code.rawValue) { return ("close code \(code.rawValue)", false) }
                if code == nil, !reason.isEmpty { return ("a reason without a code", false) }
            }
        }
        let again = run([whole.events.flatMap { frame(for: $0, using: &rng) }])
        guard again.error == nil, again.events == whole.events else {
            return ("the events framed again parse to \(again), not \(whole.events)", false)
        }
        return (nil, !whole.events.isEmpty)
    }

    /// One event as a masked client frame (a data message split in up to three fragments).
    static func frame(for event: WebSocketEvent, using rng: inout FuzzRandom) -> [UInt8] {
        switch event {
        case .text(let text): return fragments(0x1, Array(text.utf8), using: &rng)
        case .binary(let bytes): return fragments(0x2, bytes, using: &rng)
        case .ping(let payload): return maskedFrame(0x9, payload, fin: true, using: &rng)
        case .pong(let payload): return maskedFrame(0xA, payload, fin: true, using: &rng)
        case .close(let code, let reason):
            guard let code else { return maskedFrame(0x8, [], fin: true, using: &rng) }
            return maskedFrame(0x8, [UInt8(code.rawValue >> 8), UInt8(code.rawValue & 0xFF)] + Array(reason.utf8), fin: true, using: &rng)
        }
    }

    private static func fragments(_ opcode: UInt8, _ payload: [UInt8], using rng: inout FuzzRandom) -> [UInt8] {
        let cut1 = Int.random(in: 0...payload.count, using: &rng)
        let cut2 = Int.random(in: cut1...payload.count, using: &rng)
        return maskedFrame(opcode, Array(payload[..<cut1]), fin: false, using: &rng)
            + maskedFrame(0x0, Array(payload[cut1..<cut2]), fin: false, using: &rng)
            + maskedFrame(0x0, Array(payload[cut2...]), fin: true, using: &rng)
    }

    static func maskedFrame(_ opcode: UInt8, _ payload: [UInt8], fin: Bool, using rng: inout FuzzRandom) -> [UInt8] {
        var out: [UInt8] = [(fin ? 0x80 : 0) | opcode]
        if payload.count < 126 {
            out.append(0x80 | UInt8(payload.count))
        } else if payload.count <= 0xFFFF {
            out += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        } else {
            out.append(0x80 | 127)
            out += (0..<8).map { UInt8(truncatingIfNeeded: UInt64(payload.count) >> UInt64(8 * (7 - $0))) }
        }
        let key = (0..<4).map { _ in UInt8.random(in: 0...255, using: &rng) }
        out += key
        out += payload.enumerated().map { $0.element ^ key[$0.offset & 3] }
        return out
    }
}

/// The invariants of the incremental UTF-8 validator, against the standard library's decoder
/// (`String(validating:as:)`) as the oracle:
/// - it accepts exactly what the oracle accepts, however the bytes are split;
/// - it fails fast: the first byte it refuses is the first byte after which no continuation
///   could make the bytes valid, and it never refuses a prefix that could still be completed.
enum UTF8FuzzOracle {
    static func check(_ input: [UInt8]) -> (failure: String?, keep: Bool) {
        let expected = String(validating: input, as: UTF8.self) != nil
        let valid = input.withUnsafeBytes { UTF8Validator.isValid($0) }
        guard valid == expected else { return ("validator says \(valid), the standard library \(expected)", false) }
        var rng = FuzzRandom(hashing: input)
        var validator = UTF8Validator()
        var fed = true
        for chunk in fuzzChunks(input, maxPiece: 9, using: &rng) where fed { fed = validator.feed(chunk) }
        guard (fed && validator.isComplete) == expected else { return ("in pieces the validator says \(!expected)", false) }

        var byByte = UTF8Validator()
        var firstRefused: Int?
        for (index, byte) in input.enumerated() where !byByte.feed([byte]) {
            firstRefused = index
            break
        }
        if let firstRefused {
            if canComplete(Array(input[...firstRefused])) {
                return ("refused byte \(firstRefused), yet the bytes up to it can still be completed", false)
            }
            if !canComplete(Array(input[..<firstRefused])) {
                return ("refused only at byte \(firstRefused): too late", false)
            }
        } else if !byByte.isComplete, !canComplete(input) {
            return ("not refused, yet no continuation makes it valid", false)
        }
        return (nil, expected)
    }

    /// Whether some continuation makes `prefix` valid UTF-8: everything before the last sequence
    /// start must be valid, and that sequence (at most 4 bytes) must be completable by at most 3
    /// continuation bytes; these 5 values cover every lead byte's allowed second-byte range.
    static func canComplete(_ prefix: [UInt8]) -> Bool {
        var start = prefix.count
        while start > max(0, prefix.count - 4), start > 0 {
            start -= 1
            if prefix[start] & 0xC0 != 0x80 { break }
        }
        guard String(validating: prefix[..<start], as: UTF8.self) != nil else { return false }
        let tail = Array(prefix[start...])
        let continuations: [UInt8] = [0x80, 0x8F, 0x90, 0xA0, 0xBF]
        var tails: [[UInt8]] = [[]]
        for _ in 0...3 {
            if tails.contains(where: { String(validating: tail + $0, as: UTF8.self) != nil }) { return true }
            tails = tails.flatMap { tail in continuations.map { tail + [$0] } }
        }
        return false
    }
}
