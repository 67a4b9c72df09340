import Testing
@testable import Realtime

/// Seeded random inputs: the parser must never trap or spin, and what it
/// reports must not depend on how the bytes were chunked.
@Suite struct WebSocketFuzzTests {
    private func randomChunks(_ bytes: [UInt8], using rng: inout WSSeededRandom) -> [[UInt8]] {
        var chunks: [[UInt8]] = []
        var offset = 0
        while offset < bytes.count {
            let size = Int.random(in: 1...max(1, min(64, bytes.count - offset)), using: &rng)
            chunks.append(Array(bytes[offset..<(offset + size)]))
            offset += size
        }
        return chunks
    }

    private func checkConsistent(
        _ bytes: [UInt8], maxMessageBytes: Int, requireMaskedFrames: Bool, using rng: inout WSSeededRandom
    ) {
        let whole = wsRun([bytes], maxMessageBytes: maxMessageBytes, requireMaskedFrames: requireMaskedFrames)
        let chunked = wsRun(randomChunks(bytes, using: &rng), maxMessageBytes: maxMessageBytes,
                            requireMaskedFrames: requireMaskedFrames)
        #expect(whole == chunked, "input \(bytes)")
    }

    @Test(arguments: [UInt64(1), 2, 3, 4])
    func randomBytes(_ seed: UInt64) {
        var rng = WSSeededRandom(seed: seed)
        for round in 0..<1500 {
            let length = Int.random(in: 0...300, using: &rng)
            var bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &rng) }
            // Bias towards plausible headers so the fuzz gets past byte 0.
            if length >= 2 && round % 2 == 0 {
                bytes[0] &= 0x8F
                if round % 4 == 0 { bytes[1] = (bytes[1] & 0x7F) | 0x80 }
            }
            checkConsistent(bytes, maxMessageBytes: [0, 10, 1000, 1 << 20, .max][round % 5],
                            requireMaskedFrames: round % 3 != 0, using: &rng)
        }
    }

    @Test(arguments: [UInt64(11), 12, 13])
    func mutatedValidStreams(_ seed: UInt64) {
        var rng = WSSeededRandom(seed: seed)
        for _ in 0..<800 {
            var stream: [UInt8] = []
            var inMessage = false
            for _ in 0..<Int.random(in: 1...6, using: &rng) {
                let payload = (0..<Int.random(in: 0...140, using: &rng)).map { _ in UInt8.random(in: 0x20...0x7E, using: &rng) }
                switch Int.random(in: 0..<4, using: &rng) {
                case 0:
                    stream += wsFrame(0x9, Array(payload.prefix(125)))
                case 1:
                    let fin = Bool.random(using: &rng)
                    stream += wsFrame(inMessage ? 0x0 : 0x1, payload, fin: fin)
                    inMessage = !fin
                case 2:
                    let fin = Bool.random(using: &rng)
                    stream += wsFrame(inMessage ? 0x0 : 0x2, payload, fin: fin,
                                      lengthForm: Bool.random(using: &rng) ? .minimal : .sixtyFourBit)
                    inMessage = !fin
                default:
                    stream += wsFrame(0x8, wsClosePayload(UInt16.random(in: 990...1020, using: &rng), Array(payload.prefix(20))))
                }
            }
            for _ in 0..<Int.random(in: 0...4, using: &rng) where !stream.isEmpty {
                let index = Int.random(in: 0..<stream.count, using: &rng)
                stream[index] ^= UInt8(1) << UInt8.random(in: 0...7, using: &rng)
            }
            checkConsistent(stream, maxMessageBytes: Int.random(in: 0...400, using: &rng),
                            requireMaskedFrames: Bool.random(using: &rng), using: &rng)
        }
    }

    @Test func hostileLengthFields() {
        // Every 64-bit length with one or two bits set, with and without a
        // masking key: must fail cleanly (1002 or 1009) or wait for bytes.
        var lengths: [UInt64] = [0, .max, UInt64(Int64.max), UInt64(Int.max) - 1]
        for i in 0..<64 {
            lengths.append(1 << UInt64(i))
            for j in 0..<i { lengths.append(1 << UInt64(i) | 1 << UInt64(j)) }
        }
        for length in lengths {
            for maxMessage in [0, 65536, Int.max] {
                let stream = wsFrame(0x2, [], lengthForm: .sixtyFourBit, announcedLength: length)
                let outcome = wsRun([stream], maxMessageBytes: maxMessage)
                #expect(outcome.events.isEmpty)
                if let error = outcome.error {
                    #expect([.protocolError, .messageTooBig].contains(error.closeCode))
                } else {
                    #expect(length > 0xFFFF && length < 1 << 63 && length <= UInt64(maxMessage))
                }
            }
        }
    }
}
