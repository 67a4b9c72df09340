import Testing
@testable import Realtime

// Helpers shared by the WebSocket test files.

/// How a test frame encodes its payload length; the non-minimal forms exist
/// to check that the parser refuses them (RFC 6455 §5.2).
enum WSLengthForm {
    case minimal
    case sixteenBit
    case sixtyFourBit
}

/// The masking key from the RFC 6455 §5.7 examples.
let wsExampleMask: [UInt8] = [0x37, 0xFA, 0x21, 0x3D]

/// Builds one client frame. Masked with `mask` unless it is nil; RSV bits,
/// FIN and the length encoding are controllable so that invalid frames can be
/// built too. `announcedLength` overrides the length field (the payload is
/// still appended as given), for frames that claim more than they carry.
func wsFrame(
    _ opcode: UInt8,
    _ payload: [UInt8] = [],
    fin: Bool = true,
    rsv: UInt8 = 0,
    mask: [UInt8]? = wsExampleMask,
    lengthForm: WSLengthForm = .minimal,
    announcedLength: UInt64? = nil
) -> [UInt8] {
    var out: [UInt8] = [(fin ? 0x80 : 0) | (rsv << 4) | (opcode & 0x0F)]
    let maskBit: UInt8 = mask == nil ? 0 : 0x80
    let length = announcedLength ?? UInt64(payload.count)
    var form = lengthForm
    if form == .minimal {
        form = length <= 125 ? .minimal : (length <= 0xFFFF ? .sixteenBit : .sixtyFourBit)
    }
    switch form {
    case .minimal:
        out.append(maskBit | UInt8(length))
    case .sixteenBit:
        out.append(maskBit | 126)
        out.append(UInt8(truncatingIfNeeded: length >> 8))
        out.append(UInt8(truncatingIfNeeded: length))
    case .sixtyFourBit:
        out.append(maskBit | 127)
        for shift in stride(from: 56, through: 0, by: -8) {
            out.append(UInt8(truncatingIfNeeded: length >> UInt64(shift)))
        }
    }
    if let mask {
        out.append(contentsOf: mask)
        for (i, byte) in payload.enumerated() {
            out.append(byte ^ mask[i % 4])
        }
    } else {
        out.append(contentsOf: payload)
    }
    return out
}

func wsBytes(_ string: String) -> [UInt8] { Array(string.utf8) }

/// Close payload: big-endian code followed by the reason bytes.
func wsClosePayload(_ code: UInt16, _ reason: [UInt8] = []) -> [UInt8] {
    [UInt8(code >> 8), UInt8(code & 0xFF)] + reason
}

/// Everything a parser produced for a byte stream.
struct WSOutcome: Equatable, CustomStringConvertible {
    var events: [WebSocketEvent] = []
    var error: WebSocketProtocolError?

    var description: String {
        "events: \(events.map(Self.describe)), error: \(error.map { "\($0)" } ?? "none")"
    }

    private static func describe(_ event: WebSocketEvent) -> String {
        switch event {
        case .text(let s): return s.count > 40 ? "text(\(s.utf8.count) bytes)" : "text(\(s.debugDescription))"
        case .binary(let b): return "binary(\(b.count) bytes)"
        case .ping(let b): return "ping(\(b))"
        case .pong(let b): return "pong(\(b))"
        case .close(let code, let reason): return "close(\(code.map { "\($0)" } ?? "nil"), \(reason.debugDescription))"
        }
    }
}

/// Appends each chunk and drains `next()` after every append, the way a
/// connection would. The drain loop is bounded: more iterations than bytes
/// fed means the parser is spinning, which is recorded as an issue.
func wsRun(
    _ chunks: [[UInt8]],
    maxMessageBytes: Int = 64 * 1024,
    requireMaskedFrames: Bool = true,
    sourceLocation: SourceLocation = #_sourceLocation
) -> WSOutcome {
    var parser = WebSocketFrameParser(maxMessageBytes: maxMessageBytes, requireMaskedFrames: requireMaskedFrames)
    var outcome = WSOutcome()
    var total = 0
    for chunk in chunks {
        chunk.withUnsafeBytes { parser.append($0) }
        total += chunk.count
        var iterations = 0
        while true {
            iterations += 1
            if iterations > total + 2 {
                Issue.record("next() kept returning events without consuming input", sourceLocation: sourceLocation)
                return outcome
            }
            do throws(WebSocketProtocolError) {
                guard let event = try parser.next() else { break }
                outcome.events.append(event)
            } catch {
                outcome.error = error
                // A failed parser must keep failing with the same error.
                do throws(WebSocketProtocolError) {
                    _ = try parser.next()
                    Issue.record("parser did not stay failed", sourceLocation: sourceLocation)
                } catch let again {
                    #expect(again == error, sourceLocation: sourceLocation)
                }
                return outcome
            }
        }
    }
    return outcome
}

/// Feeds `stream` whole, byte by byte, and split in two at every boundary,
/// and checks that all of these give `expected`. Splits are skipped for long
/// streams (quadratic cost); `splitStride` thins them out instead.
func wsExpectSameForAllChunkings(
    _ stream: [UInt8],
    _ expected: WSOutcome,
    maxMessageBytes: Int = 64 * 1024,
    requireMaskedFrames: Bool = true,
    splitStride: Int = 1,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    func check(_ chunks: [[UInt8]], _ label: String) -> Bool {
        let got = wsRun(chunks, maxMessageBytes: maxMessageBytes, requireMaskedFrames: requireMaskedFrames,
                        sourceLocation: sourceLocation)
        if got != expected {
            Issue.record("\(label): got \(got), expected \(expected)", sourceLocation: sourceLocation)
            return false
        }
        return true
    }
    guard check([stream], "whole") else { return }
    guard check(stream.map { [$0] }, "byte by byte") else { return }
    for split in stride(from: 1, to: stream.count, by: max(1, splitStride)) {
        guard check([Array(stream[..<split]), Array(stream[split...])], "split at \(split)") else { return }
    }
}

/// Deterministic PRNG (SplitMix64) so fuzz failures reproduce.
struct WSSeededRandom: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
