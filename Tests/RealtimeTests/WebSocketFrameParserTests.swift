import Testing
@testable import Realtime

@Suite struct WebSocketFrameParserTests {
    private func ok(_ events: WebSocketEvent...) -> WSOutcome { WSOutcome(events: events) }

    private func failed(_ code: WebSocketCloseCode, after events: [WebSocketEvent] = []) -> (WSOutcome) -> Bool {
        { $0.events == events && $0.error?.closeCode == code }
    }

    /// Checks every chunking gives events followed by an error with `code`.
    private func expectRefused(
        _ stream: [UInt8],
        _ code: WebSocketCloseCode,
        after events: [WebSocketEvent] = [],
        maxMessageBytes: Int = 64 * 1024,
        requireMaskedFrames: Bool = true,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let whole = wsRun([stream], maxMessageBytes: maxMessageBytes, requireMaskedFrames: requireMaskedFrames)
        #expect(whole.events == events, sourceLocation: sourceLocation)
        #expect(whole.error?.closeCode == code, "\(whole)", sourceLocation: sourceLocation)
        // The exact error (reason included) must not depend on chunking.
        wsExpectSameForAllChunkings(stream, whole, maxMessageBytes: maxMessageBytes,
                                    requireMaskedFrames: requireMaskedFrames, sourceLocation: sourceLocation)
    }

    // MARK: - RFC 6455 §5.7 examples

    @Test func rfcExampleUnmaskedText() {
        let stream: [UInt8] = [0x81, 0x05, 0x48, 0x65, 0x6C, 0x6C, 0x6F]
        wsExpectSameForAllChunkings(stream, ok(.text("Hello")), requireMaskedFrames: false)
    }

    @Test func rfcExampleMaskedText() {
        let stream: [UInt8] = [0x81, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58]
        wsExpectSameForAllChunkings(stream, ok(.text("Hello")))
        #expect(stream == wsFrame(0x1, wsBytes("Hello")))
    }

    @Test func rfcExampleFragmentedUnmaskedText() {
        let stream: [UInt8] = [0x01, 0x03, 0x48, 0x65, 0x6C, 0x80, 0x02, 0x6C, 0x6F]
        wsExpectSameForAllChunkings(stream, ok(.text("Hello")), requireMaskedFrames: false)
    }

    @Test func rfcExamplePingAndMaskedPong() {
        let ping: [UInt8] = [0x89, 0x05, 0x48, 0x65, 0x6C, 0x6C, 0x6F]
        wsExpectSameForAllChunkings(ping, ok(.ping(wsBytes("Hello"))), requireMaskedFrames: false)
        let pong: [UInt8] = [0x8A, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58]
        wsExpectSameForAllChunkings(pong, ok(.pong(wsBytes("Hello"))))
    }

    @Test func rfcExampleBinaryLengths() {
        let small = (0..<256).map { UInt8($0) }
        var stream: [UInt8] = [0x82, 0x7E, 0x01, 0x00] + small
        wsExpectSameForAllChunkings(stream, ok(.binary(small)), requireMaskedFrames: false)
        let big = (0..<65536).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        stream = [0x82, 0x7F, 0, 0, 0, 0, 0, 1, 0, 0] + big
        wsExpectSameForAllChunkings(stream, ok(.binary(big)), requireMaskedFrames: false, splitStride: 4099)
    }

    // MARK: - Lengths and masking

    @Test(arguments: [0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 125, 126, 127, 128, 1000, 65535])
    func maskedBinaryOfLength(_ length: Int) {
        let payload = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 5) }
        let stream = wsFrame(0x2, payload)
        wsExpectSameForAllChunkings(stream, ok(.binary(payload)), splitStride: length > 300 ? 97 : 1)
        // The same frame unmasked parses the same when masking is optional.
        wsExpectSameForAllChunkings(wsFrame(0x2, payload, mask: nil), ok(.binary(payload)),
                                    requireMaskedFrames: false, splitStride: length > 300 ? 97 : 1)
    }

    @Test func lengthFormsAtTheirBoundaries() {
        // 125 is the largest 7-bit length, 126 the smallest 16-bit one,
        // 65535 the largest 16-bit one and 65536 the smallest 64-bit one.
        for length in [125, 126, 65535, 65536, 100_000] {
            let payload = [UInt8](repeating: 0x61, count: length)
            let outcome = wsRun([wsFrame(0x1, payload)], maxMessageBytes: 1 << 20)
            #expect(outcome == ok(.text(String(repeating: "a", count: length))), "length \(length)")
        }
        #expect(wsFrame(0x2, [UInt8](repeating: 0, count: 126))[1] == 0x80 | 126)
        #expect(wsFrame(0x2, [UInt8](repeating: 0, count: 65536))[1] == 0x80 | 127)
    }

    @Test func maskedWithVariousKeys() {
        let payload = wsBytes("The quick brown fox jumps over the lazy dog, twice over.")
        for key: [UInt8] in [[0, 0, 0, 0], [0xFF, 0xFF, 0xFF, 0xFF], [1, 2, 3, 4], [0x80, 0x00, 0x7F, 0xAA]] {
            wsExpectSameForAllChunkings(wsFrame(0x1, payload, mask: key), ok(.text(String(decoding: payload, as: UTF8.self))))
        }
    }

    @Test func unmaskMatchesBytewiseXORAtEveryPhase() {
        var rng = WSSeededRandom(seed: 42)
        for length in [0, 1, 3, 7, 8, 9, 15, 16, 17, 63, 64, 65, 1000] {
            let key = UInt32.random(in: .min ... .max, using: &rng)
            let keyBytes = withUnsafeBytes(of: key) { Array($0) }
            for phase in 0..<4 {
                let original = (0..<length).map { _ in UInt8.random(in: 0...255, using: &rng) }
                var data = original
                data.withUnsafeMutableBytes { WebSocketFrameParser.unmask($0, key: key, phase: phase) }
                let expected = original.enumerated().map { $0.element ^ keyBytes[($0.offset + phase) % 4] }
                #expect(data == expected, "length \(length) phase \(phase)")
            }
        }
    }

    // MARK: - Messages, fragmentation, control frames

    @Test func emptyMessages() {
        let stream = wsFrame(0x1, []) + wsFrame(0x2, []) + wsFrame(0x1, [], fin: false) + wsFrame(0x0, [], fin: false)
            + wsFrame(0x0, [])
        wsExpectSameForAllChunkings(stream, ok(.text(""), .binary([]), .text("")))
    }

    @Test func fragmentedTextWithInterleavedControlFrames() {
        // "wörld": the two bytes of "ö" land in different fragments, so UTF-8
        // state must carry across frames.
        let o = wsBytes("ö")
        let stream = wsFrame(0x1, wsBytes("Hel"), fin: false)
            + wsFrame(0x9, wsBytes("p1"))
            + wsFrame(0x0, wsBytes("lo w") + [o[0]], fin: false)
            + wsFrame(0xA, [])
            + wsFrame(0x9, [])
            + wsFrame(0x0, [o[1]] + wsBytes("rld"))
            + wsFrame(0x2, [1, 2, 3])
        wsExpectSameForAllChunkings(stream, ok(.ping(wsBytes("p1")), .pong([]), .ping([]), .text("Hello wörld"), .binary([1, 2, 3])))
    }

    @Test func fragmentedBinaryManyPieces() {
        var stream: [UInt8] = []
        var whole: [UInt8] = []
        for i in 0..<20 {
            let piece = [UInt8](repeating: UInt8(i), count: i)
            whole += piece
            stream += wsFrame(i == 0 ? 0x2 : 0x0, piece, fin: i == 19)
            if i % 5 == 0 { stream += wsFrame(0x9, [UInt8(i)]) }
        }
        wsExpectSameForAllChunkings(stream, ok(.ping([0]), .ping([5]), .ping([10]), .ping([15]), .binary(whole)))
    }

    @Test func manyMessagesInOneAppend() {
        var stream: [UInt8] = []
        var expected: [WebSocketEvent] = []
        for i in 0..<2000 {
            stream += wsFrame(0x1, wsBytes("message \(i)"))
            expected.append(.text("message \(i)"))
        }
        var parser = WebSocketFrameParser()
        parser.append(stream)
        var events: [WebSocketEvent] = []
        while let event = try? parser.next() { events.append(event) }
        #expect(events == expected)
        #expect(parser.bufferedByteCount == 0)
        #expect(!parser.isMessageInProgress)
    }

    @Test func bufferStaysSmallWhileALargeFrameStreamsIn() throws {
        var parser = WebSocketFrameParser(maxMessageBytes: 1 << 20)
        let payload = [UInt8](repeating: 0x5A, count: 1 << 20)
        let stream = wsFrame(0x2, payload)
        var offset = 0
        var result: WebSocketEvent?
        while offset < stream.count {
            let end = min(stream.count, offset + 1500)
            parser.append(Array(stream[offset..<end]))
            offset = end
            if let event = try parser.next() { result = event }
            // Payload moves out of the receive buffer as it arrives.
            #expect(parser.bufferedByteCount == 0)
        }
        #expect(result == .binary(payload))
    }

    @Test func messageExactlyAtTheLimitIsAccepted() {
        let payload = [UInt8](repeating: 7, count: 1000)
        wsExpectSameForAllChunkings(wsFrame(0x2, payload), ok(.binary(payload)), maxMessageBytes: 1000, splitStride: 37)
        let fragmented = wsFrame(0x2, Array(payload[..<400]), fin: false) + wsFrame(0x0, Array(payload[400...]))
        wsExpectSameForAllChunkings(fragmented, ok(.binary(payload)), maxMessageBytes: 1000, splitStride: 37)
    }

    @Test func controlFramesAreNotCountedAgainstTheMessageLimit() {
        let stream = wsFrame(0x2, [1, 2], fin: false) + wsFrame(0x9, [UInt8](repeating: 9, count: 125)) + wsFrame(0x0, [3, 4])
        wsExpectSameForAllChunkings(stream, ok(.ping([UInt8](repeating: 9, count: 125)), .binary([1, 2, 3, 4])), maxMessageBytes: 4)
    }

    // MARK: - Close frames

    @Test func closeWithoutPayload() {
        wsExpectSameForAllChunkings(wsFrame(0x8, []), ok(.close(code: nil, reason: "")))
    }

    @Test func closeWithCodeAndReason() {
        wsExpectSameForAllChunkings(wsFrame(0x8, wsClosePayload(1000)), ok(.close(code: .normal, reason: "")))
        wsExpectSameForAllChunkings(wsFrame(0x8, wsClosePayload(1001, wsBytes("bye ✓"))), ok(.close(code: .goingAway, reason: "bye ✓")))
        let longReason = String(repeating: "x", count: 123)
        wsExpectSameForAllChunkings(wsFrame(0x8, wsClosePayload(4999, wsBytes(longReason))),
                                    ok(.close(code: WebSocketCloseCode(rawValue: 4999), reason: longReason)))
    }

    @Test(arguments: [UInt16(1000), 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014, 3000, 3999, 4000, 4999])
    func validCloseCodesAreAccepted(_ code: UInt16) {
        let outcome = wsRun([wsFrame(0x8, wsClosePayload(code, wsBytes("r")))])
        #expect(outcome == ok(.close(code: WebSocketCloseCode(rawValue: code), reason: "r")))
    }

    @Test(arguments: [UInt16(0), 1, 999, 1004, 1005, 1006, 1015, 1016, 1100, 2000, 2999, 5000, 65535])
    func invalidCloseCodesAreRefused(_ code: UInt16) {
        expectRefused(wsFrame(0x8, wsClosePayload(code)), .protocolError)
    }

    @Test func closePayloadOfOneByteIsRefused() {
        expectRefused(wsFrame(0x8, [0x03]), .protocolError)
    }

    @Test func closeReasonWithInvalidUTF8IsRefused() {
        expectRefused(wsFrame(0x8, wsClosePayload(1000, [0x61, 0xC0, 0xAF])), .invalidPayload)
        expectRefused(wsFrame(0x8, wsClosePayload(1000, [0xE2, 0x82])), .invalidPayload)
    }

    @Test func nothingIsParsedAfterClose() {
        // RFC 6455 §5.5.1: no data follows a Close frame, so anything after
        // it, valid or not, is ignored rather than echoed or refused.
        let stream = wsFrame(0x1, wsBytes("a")) + wsFrame(0x8, wsClosePayload(1000)) + wsFrame(0x1, wsBytes("b"))
            + wsFrame(0x9, []) + [0xFF, 0xFF]
        wsExpectSameForAllChunkings(stream, ok(.text("a"), .close(code: .normal, reason: "")))
        var parser = WebSocketFrameParser()
        parser.append(wsFrame(0x8, []))
        #expect(throws: Never.self) { try parser.next() }
        #expect(parser.isClosed)
        parser.append(wsFrame(0x1, wsBytes("late")))
        #expect(parser.bufferedByteCount == 0)
        #expect(throws: Never.self) {
            let event = try parser.next()
            #expect(event == nil)
        }
    }

    @Test func closeBetweenFragmentsIsReportedAndEndsTheStream() {
        let stream = wsFrame(0x1, wsBytes("par"), fin: false) + wsFrame(0x8, wsClosePayload(1000)) + wsFrame(0x0, wsBytes("t"))
        wsExpectSameForAllChunkings(stream, ok(.close(code: .normal, reason: "")))
    }

    // MARK: - Refusals

    @Test(arguments: [UInt8(1), 2, 3, 4, 5, 6, 7])
    func reservedBitsAreRefused(_ rsv: UInt8) {
        expectRefused(wsFrame(0x1, wsBytes("hi"), rsv: rsv), .protocolError)
        expectRefused(wsFrame(0x9, [], rsv: rsv), .protocolError)
        expectRefused(wsFrame(0x1, wsBytes("ok")) + wsFrame(0x2, [1], rsv: rsv), .protocolError, after: [.text("ok")])
    }

    @Test(arguments: [UInt8(3), 4, 5, 6, 7, 0xB, 0xC, 0xD, 0xE, 0xF])
    func reservedOpcodesAreRefused(_ opcode: UInt8) {
        expectRefused(wsFrame(opcode, []), .protocolError)
        expectRefused(wsFrame(opcode, wsBytes("payload")), .protocolError)
        // Also between the fragments of a message.
        expectRefused(wsFrame(0x1, wsBytes("a"), fin: false) + wsFrame(opcode, []), .protocolError)
    }

    @Test func unmaskedFramesAreRefusedWhenMaskingIsRequired() {
        expectRefused(wsFrame(0x1, wsBytes("Hello"), mask: nil), .protocolError)
        expectRefused(wsFrame(0x9, [], mask: nil), .protocolError)
        expectRefused(wsFrame(0x1, wsBytes("a"), fin: false) + wsFrame(0x0, wsBytes("b"), mask: nil), .protocolError)
    }

    @Test(arguments: [UInt8(0x8), 0x9, 0xA])
    func fragmentedControlFramesAreRefused(_ opcode: UInt8) {
        expectRefused(wsFrame(opcode, [], fin: false), .protocolError)
    }

    @Test(arguments: [UInt8(0x8), 0x9, 0xA])
    func oversizedControlFramesAreRefused(_ opcode: UInt8) {
        let payload = opcode == 0x8 ? wsClosePayload(1000, [UInt8](repeating: 0x61, count: 124)) : [UInt8](repeating: 1, count: 126)
        expectRefused(wsFrame(opcode, payload), .protocolError)
        expectRefused(wsFrame(opcode, [UInt8](repeating: 1, count: 70000)), .protocolError)
        // 125 bytes announced in the 16-bit form is both oversize-form and non-minimal.
        expectRefused(wsFrame(opcode, [UInt8](repeating: 1, count: 10), lengthForm: .sixteenBit), .protocolError)
        // The refusal comes from the first two bytes alone.
        var parser = WebSocketFrameParser()
        parser.append(Array(wsFrame(opcode, [UInt8](repeating: 1, count: 126)).prefix(2)))
        #expect(throws: WebSocketProtocolError.self) { try parser.next() }
    }

    @Test func nonMinimalLengthsAreRefused() {
        expectRefused(wsFrame(0x2, [1, 2, 3], lengthForm: .sixteenBit), .protocolError)
        expectRefused(wsFrame(0x2, [UInt8](repeating: 0, count: 125), lengthForm: .sixteenBit), .protocolError)
        expectRefused(wsFrame(0x2, [1, 2, 3], lengthForm: .sixtyFourBit), .protocolError)
        expectRefused(wsFrame(0x2, [UInt8](repeating: 0, count: 65535), lengthForm: .sixtyFourBit), .protocolError)
        // The smallest lengths of each form are fine.
        let payload126 = [UInt8](repeating: 0, count: 126)
        #expect(wsRun([wsFrame(0x2, payload126, lengthForm: .sixteenBit)]) == ok(.binary(payload126)))
    }

    @Test func sixtyFourBitLengthWithTopBitIsRefused() {
        expectRefused(wsFrame(0x2, [], lengthForm: .sixtyFourBit, announcedLength: 1 << 63), .protocolError)
        expectRefused(wsFrame(0x2, [], lengthForm: .sixtyFourBit, announcedLength: .max), .protocolError)
    }

    @Test func hugeLengthGivesMessageTooBigWithoutTrapping() {
        expectRefused(wsFrame(0x2, [], lengthForm: .sixtyFourBit, announcedLength: UInt64(Int64.max)), .messageTooBig)
        // With no limit to speak of, the same header just waits for its payload.
        #expect(wsRun([wsFrame(0x2, [], lengthForm: .sixtyFourBit, announcedLength: UInt64(Int64.max))],
                      maxMessageBytes: .max) == WSOutcome())
        // Sum of fragments overflowing must not trap either.
        let first = wsFrame(0x2, [1, 2, 3], fin: false)
        expectRefused(first + wsFrame(0x0, [], lengthForm: .sixtyFourBit, announcedLength: UInt64(Int64.max) - 1), .messageTooBig,
                      maxMessageBytes: .max)
    }

    @Test func messageTooBigIsRefusedFromTheHeaderAlone() {
        var parser = WebSocketFrameParser(maxMessageBytes: 64 * 1024)
        let header = Array(wsFrame(0x2, [], announcedLength: 1 << 20).prefix(10))  // 2 + 8 length bytes, no mask key yet
        parser.append(header)
        do throws(WebSocketProtocolError) {
            _ = try parser.next()
            Issue.record("expected 1009")
        } catch {
            #expect(error.closeCode == .messageTooBig)
        }
        // Over by one byte, in a single frame and across fragments.
        expectRefused(wsFrame(0x2, [UInt8](repeating: 0, count: 1001)), .messageTooBig, maxMessageBytes: 1000)
        expectRefused(wsFrame(0x1, [UInt8](repeating: 0x61, count: 600), fin: false) + wsFrame(0x9, [])
                      + wsFrame(0x0, [UInt8](repeating: 0x61, count: 401)),
                      .messageTooBig, after: [.ping([])], maxMessageBytes: 1000)
        expectRefused(wsFrame(0x2, [1]), .messageTooBig, maxMessageBytes: 0)
    }

    @Test func aMessageInMoreFragmentsThanAllowedIsRefusedWith1008() {
        func feed(_ bytes: [UInt8], maxFragments: Int) -> (events: [WebSocketEvent], error: WebSocketProtocolError?) {
            var parser = WebSocketFrameParser(maxMessageBytes: 1 << 20, maxFragments: maxFragments)
            parser.append(bytes)
            var events: [WebSocketEvent] = []
            do throws(WebSocketProtocolError) {
                while let event = try parser.next() { events.append(event) }
                return (events, nil)
            } catch {
                return (events, error)
            }
        }
        let first = wsFrame(0x1, wsBytes("a"), fin: false)
        let empty = wsFrame(0x0, [], fin: false)
        let last = wsFrame(0x0, wsBytes("b"))
        // Exactly at the limit (first + 2 continuations + last = 4 frames): accepted.
        #expect(feed(first + empty + empty + last, maxFragments: 4).events == [.text("ab")])
        // One empty continuation more: refused when its header is read, before the rest.
        let refused = feed(first + empty + empty + empty + last, maxFragments: 4)
        #expect(refused.events.isEmpty)
        #expect(refused.error?.closeCode == .policyViolation)
        // The count is per message: the next message starts again from one.
        #expect(feed(first + empty + last + first + empty + last, maxFragments: 3).events == [.text("ab"), .text("ab")])
        // A million empty continuations never reach the end.
        let flood = first + Array([[UInt8]](repeating: empty, count: 1_000).joined())
        #expect(feed(flood, maxFragments: 128).error == WebSocketProtocolError(closeCode: .policyViolation,
                                                                                  reason: "message in too many fragments"))
    }

    @Test func messagesStartedCountsFirstFramesOnly() {
        var parser = WebSocketFrameParser()
        parser.append(wsFrame(0x1, wsBytes("a"), fin: false) + wsFrame(0x9, []))
        _ = try? parser.next()
        #expect(parser.messagesStarted == 1 && parser.isMessageInProgress)
        parser.append(wsFrame(0x0, wsBytes("b")) + wsFrame(0x2, [1]))
        while (try? parser.next()) != nil {}
        #expect(parser.messagesStarted == 2 && !parser.isMessageInProgress)
    }

    @Test func continuationWithoutMessageIsRefused() {
        expectRefused(wsFrame(0x0, wsBytes("orphan")), .protocolError)
        expectRefused(wsFrame(0x0, [], fin: false), .protocolError)
        // Also right after a message finished.
        expectRefused(wsFrame(0x1, wsBytes("done")) + wsFrame(0x0, wsBytes("more")), .protocolError, after: [.text("done")])
    }

    @Test func newMessageInsideFragmentedMessageIsRefused() {
        expectRefused(wsFrame(0x1, wsBytes("a"), fin: false) + wsFrame(0x1, wsBytes("b")), .protocolError)
        expectRefused(wsFrame(0x1, wsBytes("a"), fin: false) + wsFrame(0x2, [1]), .protocolError)
        expectRefused(wsFrame(0x2, [1], fin: false) + wsFrame(0x9, []) + wsFrame(0x2, [2], fin: false),
                      .protocolError, after: [.ping([])])
    }

    // MARK: - UTF-8 in text messages

    @Test func invalidUTF8InTextIsRefused() {
        expectRefused(wsFrame(0x1, [0x61, 0xC0, 0xAF, 0x62]), .invalidPayload)
        expectRefused(wsFrame(0x1, [0xED, 0xA0, 0x80]), .invalidPayload)
        expectRefused(wsFrame(0x1, [0xF4, 0x90, 0x80, 0x80]), .invalidPayload)
        // Binary messages are not validated.
        #expect(wsRun([wsFrame(0x2, [0xC0, 0xAF])]) == ok(.binary([0xC0, 0xAF])))
    }

    @Test func textEndingInsideASequenceIsRefused() {
        expectRefused(wsFrame(0x1, [0x61, 0xE2, 0x82]), .invalidPayload)
        expectRefused(wsFrame(0x1, [0x61, 0xE2], fin: false) + wsFrame(0x0, [0x82]), .invalidPayload)
    }

    @Test func invalidUTF8InFirstFragmentFailsFast() throws {
        // Autobahn 6.4.1: the first fragment is invalid, the rest never comes
        // (or comes much later); the error must not wait for it.
        var parser = WebSocketFrameParser()
        parser.append(wsFrame(0x1, wsBytes("κόσμε") + [0xF4, 0x90, 0x80, 0x80], fin: false))
        #expect(throws: WebSocketProtocolError(closeCode: .invalidPayload, reason: "invalid UTF-8 in text message")) {
            try parser.next()
        }
    }

    @Test func invalidUTF8FailsInsideAFrameBeforeItIsComplete() throws {
        // Autobahn 6.4.3/6.4.4: one frame delivered in chunks; the bad byte
        // must fail the connection without waiting for the frame's end.
        var parser = WebSocketFrameParser()
        let frame = wsFrame(0x1, wsBytes("κόσμε") + [0xF4, 0x90, 0x80, 0x80] + wsBytes("edited"))
        let headerLength = 6
        let badByteEnd = headerLength + wsBytes("κόσμε").count + 2  // through 0xF4 0x90
        parser.append(Array(frame[..<(badByteEnd - 1)]))
        #expect(try parser.next() == nil)
        parser.append([frame[badByteEnd - 1]])
        #expect(throws: WebSocketProtocolError.self) { try parser.next() }
    }

    @Test func validMultibyteTextSplitAnywhere() {
        let text = "κόσμε 🎉 Hello wörld ✓ \u{10FFFF}\u{FFFF}"
        let bytes = wsBytes(text)
        wsExpectSameForAllChunkings(wsFrame(0x1, bytes), ok(.text(text)))
        // And as one fragment per byte.
        var stream: [UInt8] = []
        for (i, byte) in bytes.enumerated() {
            stream += wsFrame(i == 0 ? 0x1 : 0x0, [byte], fin: i == bytes.count - 1)
        }
        wsExpectSameForAllChunkings(stream, ok(.text(text)), splitStride: 3)
    }

    // MARK: - Failure is sticky

    @Test func failedParserStaysFailedAndDropsInput() {
        var parser = WebSocketFrameParser()
        parser.append(wsFrame(0x1, wsBytes("x"), rsv: 4))
        #expect(throws: WebSocketProtocolError.self) { try parser.next() }
        parser.append(wsFrame(0x1, wsBytes("valid")))
        #expect(parser.bufferedByteCount == 0)
        #expect(throws: WebSocketProtocolError(closeCode: .protocolError, reason: "reserved bits set")) { try parser.next() }
    }

    @Test func errorReasonsFitACloseFrame() {
        let errors: [WebSocketProtocolError] = [
            .protocolViolation("new message inside a fragmented message"), .invalidUTF8, .tooBig,
        ]
        for error in errors {
            #expect(error.reason.utf8.count <= 123)
        }
    }
}
