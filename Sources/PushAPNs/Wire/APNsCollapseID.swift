import HeraldCore
import PushHTTP

/// The `apns-collapse-id` header: notifications with the same id replace each other on the device
/// (seed 001: `conv-<conversation id>`). Apple: "must not exceed 64 bytes", else `400 BadCollapseId`.
public struct APNsCollapseID: Hashable, Sendable, CustomStringConvertible {
    /// Apple's limit, in UTF-8 bytes.
    public static let maximumBytes = 64

    /// The header value.
    public let value: String

    /// - Throws: `PushPayloadError.collapseIDTooLong` over 64 UTF-8 bytes, `.emptyCollapseID` if empty.
    public init(_ value: String) throws(PushPayloadError) {
        let bytes = value.utf8.count
        guard bytes > 0 else { throw .emptyCollapseID }
        guard bytes <= Self.maximumBytes else { throw .collapseIDTooLong(bytes: bytes) }
        self.value = value
    }

    public var description: String { value }
}
