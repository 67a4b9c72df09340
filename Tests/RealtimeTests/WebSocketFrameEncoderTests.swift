import Testing
@testable import Realtime

@Suite struct WebSocketFrameEncoderTests {
    /// Decodes server frames with the client-side rule (no masking allowed
    /// is not enforced by our parser, so masking is simply made optional).
    private func decode(_ bytes: [UInt8], maxMessageBytes: Int = 1 << 20) -> WSOutcome {
        wsRun([bytes], maxMessageBytes: maxMessageBytes, requireMaskedFrames: false)
    }

    @Test func headersUseMinimalLengthsAndNoMask() {
        #expect(WebSocketFrameEncoder.text("Hello") == [0x81, 0x05, 0x48, 0x65, 0x6C, 0x6C, 0x6F])
        #expect(WebSocketFrameEncoder.header(.binary, payloadLength: 0) == [0x82, 0x00])
        #expect(WebSocketFrameEncoder.header(.binary, payloadLength: 125) == [0x82, 125])
        #expect(WebSocketFrameEncoder.header(.binary, payloadLength: 126) == [0x82, 126, 0x00, 0x7E])
        #expect(WebSocketFrameEncoder.header(.binary, payloadLength: 65535) == [0x82, 126, 0xFF, 0xFF])
        #expect(WebSocketFrameEncoder.header(.binary, payloadLength: 65536) == [0x82, 127, 0, 0, 0, 0, 0, 1, 0, 0])
        #expect(WebSocketFrameEncoder.header(.text, payloadLength: 3, fin: false) == [0x01, 3])
        #expect(WebSocketFrameEncoder.header(.continuation, payloadLength: 3) == [0x80, 3])
    }

    @Test(arguments: [0, 1, 125, 126, 127, 1000, 65535, 65536, 300_000])
    func textRoundTrip(_ length: Int) {
        let text = String(repeating: "é", count: length / 2) + String(repeating: "a", count: length % 2)
        let frame = WebSocketFrameEncoder.text(text)
        #expect(frame.count == text.utf8.count + (length <= 125 ? 2 : (length <= 65535 ? 4 : 10)))
        #expect(decode(frame) == WSOutcome(events: [.text(text)]))
    }

    @Test func binaryAndFragmentedRoundTrip() {
        let payload = (0..<70000).map { UInt8(truncatingIfNeeded: $0) }
        #expect(decode(WebSocketFrameEncoder.binary(payload)) == WSOutcome(events: [.binary(payload)]))
        let fragments = WebSocketFrameEncoder.frame(.binary, payload: payload[..<10], fin: false)
            + WebSocketFrameEncoder.ping([1])
            + WebSocketFrameEncoder.frame(.continuation, payload: payload[10..<500], fin: false)
            + WebSocketFrameEncoder.frame(.continuation, payload: payload[500...])
        #expect(decode(fragments) == WSOutcome(events: [.ping([1]), .binary(payload)]))
    }

    @Test func controlFramesRoundTrip() {
        #expect(decode(WebSocketFrameEncoder.ping([])) == WSOutcome(events: [.ping([])]))
        #expect(decode(WebSocketFrameEncoder.pong([1, 2, 3])) == WSOutcome(events: [.pong([1, 2, 3])]))
        // Over-long control payloads are cut to 125 bytes instead of making an invalid frame.
        let long = [UInt8](repeating: 9, count: 200)
        #expect(decode(WebSocketFrameEncoder.ping(long)) == WSOutcome(events: [.ping(Array(long.prefix(125)))]))
        #expect(decode(WebSocketFrameEncoder.pong(long)) == WSOutcome(events: [.pong(Array(long.prefix(125)))]))
    }

    @Test func closeFrames() {
        #expect(WebSocketFrameEncoder.close(nil) == [0x88, 0x00])
        #expect(WebSocketFrameEncoder.close(nil, reason: "ignored") == [0x88, 0x00])
        #expect(WebSocketFrameEncoder.close(.normal) == [0x88, 0x02, 0x03, 0xE8])
        #expect(decode(WebSocketFrameEncoder.close(.goingAway, reason: "restart"))
                == WSOutcome(events: [.close(code: .goingAway, reason: "restart")]))
        #expect(decode(WebSocketFrameEncoder.close(.tryAgainLater)) == WSOutcome(events: [.close(code: .tryAgainLater, reason: "")]))
    }

    @Test func closeReasonIsTruncatedAtACharacterBoundary() {
        // 2-, 3- and 4-byte characters, at every alignment relative to the cut.
        for character in ["é", "✓", "🎉", "a"] {
            for prefixLength in 0..<4 {
                let reason = String(repeating: "a", count: prefixLength) + String(repeating: character, count: 200)
                let frame = WebSocketFrameEncoder.close(.policyViolation, reason: reason)
                #expect(frame.count - 2 <= 125)
                #expect(frame.count - 2 >= 125 - 3, "cut more than one character")
                guard case .close(let code, let decoded)? = decode(frame).events.first else {
                    Issue.record("not a close frame")
                    continue
                }
                #expect(code == .policyViolation)
                #expect(reason.hasPrefix(decoded))
            }
        }
        let exact = String(repeating: "x", count: 123)
        #expect(decode(WebSocketFrameEncoder.close(.normal, reason: exact)) == WSOutcome(events: [.close(code: .normal, reason: exact)]))
    }

    @Test func opcodeAndCloseCodeValues() {
        #expect([WebSocketOpcode.continuation, .text, .binary, .close, .ping, .pong].map(\.rawValue) == [0, 1, 2, 8, 9, 10])
        let controls: [WebSocketOpcode] = [.close, .ping, .pong]
        #expect(controls.allSatisfy { $0.isControl })
        #expect(![WebSocketOpcode.continuation, .text, .binary].contains { $0.isControl })
        #expect((0...15).filter { WebSocketOpcode(rawValue: UInt8($0))!.isReserved } == [3, 4, 5, 6, 7, 11, 12, 13, 14, 15])
        #expect(WebSocketOpcode(rawValue: 16) == nil)
        #expect([WebSocketCloseCode.normal, .goingAway, .protocolError, .unsupportedData, .invalidPayload, .policyViolation,
                  .messageTooBig, .internalError, .tryAgainLater].map(\.rawValue)
                == [1000, 1001, 1002, 1003, 1007, 1008, 1009, 1011, 1013])
        let valid = (0...UInt16.max).filter(WebSocketCloseCode.isValidOnWire)
        #expect(valid == Array(1000...1003) + Array(1007...1014) + Array(3000...4999))
    }
}
