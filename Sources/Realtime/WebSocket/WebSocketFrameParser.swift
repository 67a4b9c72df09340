/// What a client sent, as reported by ``WebSocketFrameParser/next()``.
///
/// Data frames are reassembled into whole messages (RFC 6455 §5.4) so callers
/// never see fragments; control frames (§5.5) are reported as soon as they
/// arrive, even between the fragments of a message.
public enum WebSocketEvent: Sendable, Equatable {
    /// A complete text message (RFC 6455 §5.6), already checked to be valid
    /// UTF-8 as §8.1 requires.
    case text(String)
    /// A complete binary message (RFC 6455 §5.6).
    case binary([UInt8])
    /// A Ping (RFC 6455 §5.5.2); answer with a Pong carrying the same payload.
    case ping([UInt8])
    /// A Pong (RFC 6455 §5.5.3), solicited or not.
    case pong([UInt8])
    /// A Close frame (RFC 6455 §5.5.1). `code` is nil when the frame had no
    /// payload, meaning no status code was given (the peer's close is then
    /// reported locally as 1005, §7.1.5); `reason` is valid UTF-8 (§5.5.1).
    case close(code: WebSocketCloseCode?, reason: String)
}

/// Why the client's byte stream was refused; the connection must be failed
/// (RFC 6455 §7.1.7) by sending a Close frame with ``closeCode`` and closing.
///
/// Codes used: 1002 for framing violations, 1007 for invalid UTF-8 (§8.1),
/// 1008 for a message in more fragments than allowed and 1009 for messages
/// over the configured limit (§7.4.1).
public struct WebSocketProtocolError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The status code to send in the Close frame (RFC 6455 §7.4.1).
    public let closeCode: WebSocketCloseCode
    /// A short, client-safe explanation that fits a Close frame's reason
    /// (at most 123 bytes, RFC 6455 §5.5).
    public let reason: String

    /// Creates an error; `reason` should stay short and free of client data
    /// because it is sent back to the peer.
    public init(closeCode: WebSocketCloseCode, reason: String) {
        self.closeCode = closeCode
        self.reason = reason
    }

    static func protocolViolation(_ reason: String) -> WebSocketProtocolError {
        WebSocketProtocolError(closeCode: .protocolError, reason: reason)
    }

    static let invalidUTF8 = WebSocketProtocolError(closeCode: .invalidPayload, reason: "invalid UTF-8 in text message")

    static let tooBig = WebSocketProtocolError(closeCode: .messageTooBig, reason: "message too big")

    static let tooManyFragments = WebSocketProtocolError(closeCode: .policyViolation, reason: "message in too many fragments")

    /// "1002: reason", for logs.
    public var description: String { "\(closeCode.rawValue): \(reason)" }
}

/// Incremental decoder of client-to-server WebSocket frames (RFC 6455 §5),
/// written as a pure value state machine: feed it bytes with `append`, pull
/// events with `next()`. It does no I/O and holds no references, so it can
/// live inside any connection object or actor.
///
/// The parser enforces every framing rule of RFC 6455 that does not depend
/// on negotiated extensions (none are negotiated, so RSV bits must be zero):
/// masking (§5.1), opcodes (§5.2), minimal length encodings (§5.2),
/// fragmentation (§5.4), control-frame limits (§5.5), Close payloads (§5.5.1,
/// §7.4) and UTF-8 (§8.1). Violations throw ``WebSocketProtocolError`` with
/// the close code to send.
///
/// Data-frame payloads are unmasked and moved into the message as they
/// arrive rather than once the frame is complete. That keeps the receive
/// buffer small, and it lets invalid UTF-8 fail the connection at the first
/// bad byte (RFC 6455 §8.1 and Autobahn's "fail fast" 6.4.x cases) even in
/// the middle of a frame. Sizes taken from the wire are compared as `UInt64`
/// before any conversion, so no length can trap.
///
/// Typical use:
/// ```
/// parser.append(bytesFromSocket)
/// while let event = try parser.next() { handle(event) }
/// ```
public struct WebSocketFrameParser: Sendable {
    /// Largest accepted message (sum of all fragments' payloads), in bytes.
    public let maxMessageBytes: Int
    /// Most data frames one message may arrive in (its first frame and the
    /// continuations). Empty continuations cost no payload bytes, so without
    /// this bound a peer could keep one message open with endless frames.
    public let maxFragments: Int
    /// Data messages begun so far (first frames seen): lets the caller time
    /// each message's assembly without the parser reading a clock.
    public private(set) var messagesStarted: UInt64 = 0
    /// Whether unmasked frames are refused. RFC 6455 §5.1 requires it of a
    /// server; turning it off is for decoding our own (unmasked) frames.
    public let requireMaskedFrames: Bool

    /// Don't keep more than this much capacity around once drained, so one
    /// burst doesn't pin memory on every idle connection.
    static let retainedCapacity = 64 * 1024

    // Receive buffer. Only headers and control frames wait here for their
    // remaining bytes; data payloads are moved out as soon as they arrive.
    var buffer: [UInt8] = []
    var readIndex = 0

    var failure: WebSocketProtocolError?
    var closeReceived = false

    // The data frame whose payload is streaming in (valid while inPayload).
    var inPayload = false
    var frameRemaining = 0
    var frameFin = false
    var frameMasked = false
    /// The 4 masking-key bytes in wire order, kept as one word so it can be
    /// widened to a 64-bit pattern without per-byte work.
    var frameMaskKey: UInt32 = 0
    /// Payload bytes of the current frame already unmasked, modulo 4: where
    /// the next byte falls in the masking key's cycle (§5.3).
    var frameMaskPhase = 0

    // The message being reassembled.
    var messageOpcode: WebSocketOpcode?
    var messageFragments = 0
    var message: [UInt8] = []
    var utf8 = UTF8Validator()

    /// Creates an idle parser.
    ///
    /// - Parameters:
    ///   - maxMessageBytes: Largest message accepted; a message whose frames
    ///     announce more fails with 1009 as soon as the announcing header is
    ///     read, before any of its payload is buffered. Negative values act
    ///     as 0.
    ///   - maxFragments: Most data frames per message; one more fails with
    ///     1008 when its header is read. Values below 1 act as 1.
    ///   - requireMaskedFrames: Refuse unmasked frames with 1002, as a server
    ///     must (RFC 6455 §5.1).
    public init(maxMessageBytes: Int = 64 * 1024, maxFragments: Int = Int.max, requireMaskedFrames: Bool = true) {
        self.maxMessageBytes = max(0, maxMessageBytes)
        self.maxFragments = max(1, maxFragments)
        self.requireMaskedFrames = requireMaskedFrames
    }

    // MARK: - Feeding

    /// Buffers bytes received from the peer. Bytes appended after an error or
    /// after a Close frame are dropped: the stream has ended either way
    /// (RFC 6455 §5.5.1 forbids data after Close).
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard failure == nil, !closeReceived, !bytes.isEmpty else { return }
        compactIfUseful()
        buffer.append(contentsOf: bytes)
    }

    /// Buffers bytes received from the peer; same as the raw-buffer overload.
    public mutating func append(_ bytes: [UInt8]) {
        guard failure == nil, !closeReceived, !bytes.isEmpty else { return }
        compactIfUseful()
        buffer.append(contentsOf: bytes)
    }

    /// Received bytes not yet consumed. Payload bytes of a message in
    /// progress are not counted: they have already moved into the message.
    public var bufferedByteCount: Int { buffer.count - readIndex }

    /// True while a fragmented message has started but not finished
    /// (RFC 6455 §5.4), e.g. to decide whether an idle timeout loses data.
    public var isMessageInProgress: Bool { messageOpcode != nil }

    /// True once a Close frame was returned; `next()` then returns nil forever.
    public var isClosed: Bool { closeReceived }

    // MARK: - Pulling

    /// Returns the next event, or nil when more bytes are needed.
    ///
    /// Events come in wire order, one per call, so a loop is needed. After a
    /// Close event the parser returns nil for good.
    ///
    /// - Throws: ``WebSocketProtocolError`` when the stream violates RFC 6455.
    ///   After an error the parser stays failed and rethrows the same error
    ///   on every call; the connection must be failed (§7.1.7).
    public mutating func next() throws(WebSocketProtocolError) -> WebSocketEvent? {
        if let failure { throw failure }
        if closeReceived { return nil }
        do throws(WebSocketProtocolError) {
            let event = try advance()
            if readIndex == buffer.count {
                buffer.removeAll(keepingCapacity: buffer.capacity <= Self.retainedCapacity)
                readIndex = 0
            }
            return event
        } catch {
            failure = error
            // Nothing more will be parsed, so don't hold the memory.
            buffer = []
            readIndex = 0
            message = []
            throw error
        }
    }

    // MARK: - State machine

    private mutating func advance() throws(WebSocketProtocolError) -> WebSocketEvent? {
        // Each iteration consumes at least one header (≥ 2 bytes), moves
        // payload bytes, finishes a frame, or returns, so the loop is bounded
        // by the buffered byte count plus the number of frames in it.
        while true {
            if inPayload {
                let available = buffer.count - readIndex
                let n = min(available, frameRemaining)
                if n > 0 {
                    try takePayload(count: n)
                }
                guard frameRemaining == 0 else { return nil }
                inPayload = false
                if frameFin, let event = try finishMessage() {
                    return event
                }
                continue
            }
            if let event = try parseFrameStart() {
                return event
            }
            if !inPayload {
                return nil
            }
        }
    }

    /// Reads a frame header. Returns an event for a complete control frame;
    /// otherwise either enters the payload phase of a data frame or returns
    /// nil because more bytes are needed (leaving `inPayload` false).
    private mutating func parseFrameStart() throws(WebSocketProtocolError) -> WebSocketEvent? {
        let available = buffer.count - readIndex
        guard available >= 2 else { return nil }
        let b0 = buffer[readIndex]
        let b1 = buffer[readIndex + 1]

        // Everything decidable from the first two bytes is checked before
        // waiting for the rest, so a bad frame fails without more input.
        guard b0 & 0x70 == 0 else {
            // §5.2: nonzero RSV bits without an extension defining them.
            throw .protocolViolation("reserved bits set")
        }
        let opcode = WebSocketOpcode(rawValue: b0 & 0x0F)!  // 4 bits: always valid
        guard !opcode.isReserved else {
            throw .protocolViolation("reserved opcode")
        }
        let fin = b0 & 0x80 != 0
        let masked = b1 & 0x80 != 0
        if requireMaskedFrames && !masked {
            // §5.1: "The server MUST close the connection upon receiving a
            // frame that is not masked."
            throw .protocolViolation("unmasked client frame")
        }
        let length7 = b1 & 0x7F
        if opcode.isControl {
            // §5.5: control frames are never fragmented and carry ≤ 125 bytes
            // (which also rules out the 16- and 64-bit length forms).
            guard fin else { throw .protocolViolation("fragmented control frame") }
            guard length7 <= 125 else { throw .protocolViolation("control frame too long") }
        } else if opcode == .continuation {
            guard messageOpcode != nil else {
                throw .protocolViolation("continuation frame without a message")
            }
            guard messageFragments < maxFragments else { throw .tooManyFragments }
        } else {
            // §5.4: fragments of one message are never interleaved with
            // another message's frames.
            guard messageOpcode == nil else {
                throw .protocolViolation("new message inside a fragmented message")
            }
        }

        let extendedLengthBytes = length7 == 126 ? 2 : (length7 == 127 ? 8 : 0)
        guard available >= 2 + extendedLengthBytes else { return nil }
        var length = UInt64(length7)
        if extendedLengthBytes > 0 {
            length = 0
            for i in 0..<extendedLengthBytes {
                length = length << 8 | UInt64(buffer[readIndex + 2 + i])
            }
            // §5.2: "the minimal number of bytes MUST be used to encode the
            // length", and the 64-bit form's most significant bit MUST be 0.
            if extendedLengthBytes == 2 {
                guard length >= 126 else { throw .protocolViolation("non-minimal length encoding") }
            } else {
                guard length >> 63 == 0 else { throw .protocolViolation("length with most significant bit set") }
                guard length > 0xFFFF else { throw .protocolViolation("non-minimal length encoding") }
            }
        }
        if !opcode.isControl {
            // Refuse from the announced length, before buffering any payload.
            // message.count <= maxMessageBytes always holds, so no underflow;
            // comparing as UInt64 keeps a 2^63-1 length from trapping.
            let room = UInt64(maxMessageBytes - message.count)
            guard length <= room else { throw .tooBig }
        }

        let headerLength = 2 + extendedLengthBytes + (masked ? 4 : 0)
        guard available >= headerLength else { return nil }
        var maskKey: UInt32 = 0
        if masked {
            let keyOffset = readIndex + headerLength - 4
            maskKey = buffer.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: keyOffset, as: UInt32.self) }
        }

        if opcode.isControl {
            // Control payloads are tiny, so they wait here until complete and
            // are decoded in one piece.
            let payloadLength = Int(length)
            guard available >= headerLength + payloadLength else { return nil }
            let start = readIndex + headerLength
            var payload = Array(buffer[start..<(start + payloadLength)])
            readIndex = start + payloadLength
            if masked {
                payload.withUnsafeMutableBytes { Self.unmask($0, key: maskKey, phase: 0) }
            }
            return try controlEvent(opcode, payload: payload)
        }

        readIndex += headerLength
        if opcode != .continuation {
            messageOpcode = opcode
            messageFragments = 0
            messagesStarted &+= 1
            utf8.reset()
        }
        messageFragments += 1
        inPayload = true
        frameRemaining = Int(length)
        frameFin = fin
        frameMasked = masked
        frameMaskKey = maskKey
        frameMaskPhase = 0
        return nil
    }

    /// Moves `count` buffered payload bytes of the current data frame into
    /// the message, unmasking and (for text) validating them on the way.
    private mutating func takePayload(count: Int) throws(WebSocketProtocolError) {
        let start = message.count
        message.append(contentsOf: buffer[readIndex..<(readIndex + count)])
        readIndex += count
        frameRemaining -= count
        let masked = frameMasked
        let key = frameMaskKey
        let phase = frameMaskPhase
        let isText = messageOpcode == .text
        var validator = utf8
        let valid = message.withUnsafeMutableBytes { all -> Bool in
            let fresh = UnsafeMutableRawBufferPointer(rebasing: all[start...])
            if masked {
                Self.unmask(fresh, key: key, phase: phase)
            }
            return !isText || validator.feed(UnsafeRawBufferPointer(fresh))
        }
        utf8 = validator
        frameMaskPhase = (phase + count) & 3
        guard valid else { throw .invalidUTF8 }
    }

    /// Completes the message after its FIN frame.
    private mutating func finishMessage() throws(WebSocketProtocolError) -> WebSocketEvent? {
        guard let opcode = messageOpcode else { return nil }
        messageOpcode = nil
        if opcode == .text {
            // A message may not end inside a multi-byte sequence (§8.1).
            guard utf8.isComplete else { throw .invalidUTF8 }
            let text = String(decoding: message, as: UTF8.self)
            message.removeAll(keepingCapacity: message.capacity <= Self.retainedCapacity)
            return .text(text)
        }
        // Hand the storage over instead of copying it; the next message
        // starts a fresh array either way.
        let bytes = message
        message = []
        return .binary(bytes)
    }

    private mutating func controlEvent(
        _ opcode: WebSocketOpcode, payload: [UInt8]
    ) throws(WebSocketProtocolError) -> WebSocketEvent {
        switch opcode {
        case .ping:
            return .ping(payload)
        case .pong:
            return .pong(payload)
        default:
            let event = try Self.closeEvent(payload)
            closeReceived = true
            buffer = []
            readIndex = 0
            return event
        }
    }

    /// Decodes a Close payload: empty, or a 2-byte code plus a UTF-8 reason
    /// (RFC 6455 §5.5.1).
    static func closeEvent(_ payload: [UInt8]) throws(WebSocketProtocolError) -> WebSocketEvent {
        if payload.isEmpty {
            return .close(code: nil, reason: "")
        }
        guard payload.count >= 2 else {
            // One byte cannot hold the 2-byte status code.
            throw .protocolViolation("close payload of 1 byte")
        }
        let raw = UInt16(payload[0]) << 8 | UInt16(payload[1])
        guard WebSocketCloseCode.isValidOnWire(raw) else {
            throw .protocolViolation("invalid close code")
        }
        let reasonBytes = payload[2...]
        let valid = reasonBytes.withUnsafeBytes { UTF8Validator.isValid($0) }
        guard valid else {
            throw WebSocketProtocolError(closeCode: .invalidPayload, reason: "invalid UTF-8 in close reason")
        }
        return .close(code: WebSocketCloseCode(rawValue: raw), reason: String(decoding: reasonBytes, as: UTF8.self))
    }

    /// XORs `bytes` with the masking key (RFC 6455 §5.3), starting `phase`
    /// bytes into the key's 4-byte cycle. Works a 64-bit word at a time: the
    /// key repeated twice, rotated to the phase, lines up with every 8-byte
    /// chunk because 8 is a multiple of 4.
    static func unmask(_ bytes: UnsafeMutableRawBufferPointer, key: UInt32, phase: Int) {
        guard let base = bytes.baseAddress else { return }
        var pattern: UInt64 = 0
        withUnsafeBytes(of: key) { keyBytes in
            withUnsafeMutableBytes(of: &pattern) { p in
                for j in 0..<8 {
                    p[j] = keyBytes[(phase + j) & 3]
                }
            }
        }
        let count = bytes.count
        var i = 0
        while i + 8 <= count {
            let word = base.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            base.storeBytes(of: word ^ pattern, toByteOffset: i, as: UInt64.self)
            i += 8
        }
        if i < count {
            withUnsafeBytes(of: pattern) { p in
                var j = 0
                while i < count {
                    bytes[i] ^= p[j]
                    i += 1
                    j += 1
                }
            }
        }
    }

    /// Drops consumed bytes before appending when the live tail is no longer
    /// than the consumed prefix, so the copying is paid for by bytes already
    /// consumed (amortised O(1) per byte) and the buffer never grows without
    /// bound while the peer keeps sending.
    private mutating func compactIfUseful() {
        guard readIndex > 0 else { return }
        if readIndex == buffer.count {
            buffer.removeAll(keepingCapacity: buffer.capacity <= Self.retainedCapacity)
        } else if buffer.count - readIndex <= readIndex {
            buffer.removeSubrange(0..<readIndex)
        } else {
            return
        }
        readIndex = 0
    }
}
