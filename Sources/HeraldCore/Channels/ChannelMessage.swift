import Synchronization

/// One published message as the broker stores and delivers it (RT-4): immutable, shared by
/// reference between the history ring, the inbound handler and every loop that writes it.
///
/// It carries no wire bytes: SSE and WebSocket encoding belong to the transport (Realtime). So that
/// the transport still encodes each message once — not once per subscriber, and not again when the
/// same message is replayed from history — a message holds one `attachment`, set by the first
/// caller and shared afterwards (DESIGN, hub: "encoded once and handed to each loop").
public final class ChannelMessage: Sendable {
    public let channel: ChannelName
    public let event: EventName
    /// Per-channel position, 1-based, gap-free (RT-4 `offset`).
    public let offset: UInt64
    /// The stream-wide position: the message's SSE `id:` (RT-4 `id`).
    public let cursor: StreamCursor
    /// The message's `data`, compact JSON on one line.
    public let data: String
    /// Monotonic ns at publish (`Clock.monotonicNanoseconds`); history TTL is measured from it.
    public let publishedAt: UInt64
    /// Whether the channel keeps this message for new subscribers (RT-6).
    public let retain: Bool

    /// nil until the transport asks; then set once (a racing builder's copy is dropped). Typed
    /// `AnyObject` because the core cannot name the transport's type; only `Sendable` objects are
    /// ever stored (`attachment` requires it), which is why the unchecked annotation is sound.
    /// Inlinable with `attachment`, because that read sits on the per-subscriber write path in
    /// another module.
    @usableFromInline nonisolated(unsafe) let attached = Atomic<Unmanaged<AnyObject>?>(nil)

    /// The stream position's sequence (`cursor.sequence`).
    @inlinable public var sequence: UInt64 { cursor.sequence }

    public init(channel: ChannelName, event: EventName, offset: UInt64, cursor: StreamCursor,
                data: String, publishedAt: UInt64, retain: Bool) {
        self.channel = channel
        self.event = event
        self.offset = offset
        self.cursor = cursor
        self.data = data
        self.publishedAt = publishedAt
        self.retain = retain
    }

    deinit {
        attached.load(ordering: .acquiring)?.release()
    }

    /// The object attached to this message, made by `make` on the first call. Concurrent first
    /// calls may each run `make`; one result wins and every caller gets that one.
    ///
    /// - Important: One kind of attachment per process (the transport's encoding): every caller
    ///   must ask for the same `T`. This is checked in debug builds only, because the call sits on
    ///   the per-subscriber write path.
    @inlinable
    public func attachment<T: AnyObject & Sendable>(_ make: (ChannelMessage) -> T) -> T {
        if let existing = attached.load(ordering: .acquiring) {
            let object = existing.takeUnretainedValue()
            assert(object is T, "a ChannelMessage carries one kind of attachment")
            return unsafeDowncast(object, to: T.self)
        }
        return attachSlow(make)
    }

    @usableFromInline
    func attachSlow<T: AnyObject & Sendable>(_ make: (ChannelMessage) -> T) -> T {
        let made = make(self)
        let candidate = Unmanaged<AnyObject>.passRetained(made)
        let (exchanged, original) = attached.compareExchange(expected: nil, desired: candidate,
                                                             ordering: .acquiringAndReleasing)
        if exchanged { return made }
        candidate.release()
        return unsafeDowncast(original!.takeUnretainedValue(), to: T.self)
    }
}
