import HeraldCore

/// One HTTP/2 request to a push provider, as the transport sends it.
///
/// The method is always `POST`: APNs answers anything else with `405 MethodNotAllowed`, FCM's
/// `messages:send` and Google's OAuth token endpoint are POST-only, and so is Expo's push API. Values
/// of this type are built by `APNsRequestBuilder`, `FCMRequestBuilder`, `FCMAssertion` and
/// `ExpoRequestBuilder` and carried, unchanged, by the libcurl transport.
///
/// - `url`: absolute URL, e.g. `https://api.push.apple.com/3/device/<hex>`.
/// - `headers`: ordered (name, value) pairs; names are lower-case because HTTP/2 requires it
///   (RFC 9113 §8.2.1). Order is kept so tests can compare exact lists.
/// - `body`: raw bytes (UTF-8 JSON or a form body), sent as given: compressed only when the builder
///   says so with `content-encoding` (Expo's gzip; APNs forbids compression). An `accept-encoding`
///   header makes libcurl decode the answer (`CURLOPT_ACCEPT_ENCODING`).
///
/// - `sendWithinMilliseconds`: not sent; how long, from the moment the transport is handed the
///   request, it may take to be put on the wire and answered (its push's `SendByDeadline`; nil: only
///   the client's own timeouts). The native client fails a request still waiting for a stream then
///   with `.sendByPassed` (never sent) and one on the wire then with `.timeout`; the libcurl client
///   caps its whole-request timeout with it.
///
/// - `publicAddressesOnly`: not sent; the URL came from a client (a Web Push endpoint), so the
///   transport must only reach the public internet with it (`IPAddress.isPublic`): the libcurl
///   client checks every address it connects to (`CURLOPT_OPENSOCKETFUNCTION`, after DNS) and the
///   peer of a connection it reuses (`CURLOPT_PREREQFUNCTION`), and fails the request with
///   `PushTransportError.addressNotPublic` when none is public. The native client (APNs, FCM:
///   URLs of the configuration) does not check addresses and refuses such a request with the same error.
public struct PushHTTPRequest: Sendable {
    public var url: String
    public var headers: [(String, String)]
    public var body: [UInt8]
    public var sendWithinMilliseconds: Int64?
    /// Not sent: the push's `SendByDeadline.audience`. The native client puts the request on a
    /// stream only while no write was counted since (`Mark.isCurrent`), else fails it unsent with
    /// `.audienceChanged`; the libcurl client does not look (its waits are inside libcurl).
    public var sendWhileAudience: PushAudienceChange.Mark?
    public var publicAddressesOnly = false

    public init(url: String, headers: [(String, String)], body: [UInt8], sendWithinMilliseconds: Int64? = nil) {
        self.url = url
        self.headers = headers
        self.body = body
        self.sendWithinMilliseconds = sendWithinMilliseconds
    }

    /// Limits the request to `sendBy`: `sendWithinMilliseconds` becomes the time left at `now`.
    ///
    /// - Parameters:
    ///   - sendBy: the push's send-by deadline; nil leaves the request unlimited.
    ///   - now: UNIX ms on the clock `sendBy` is on (the provider's).
    /// - Returns: false when the deadline has passed: send nothing, answer
    ///   `PushClassification.sendByPassed`.
    public mutating func limit(to sendBy: SendByDeadline?, nowMilliseconds now: Int64) -> Bool {
        guard let sendBy else { return true }
        let left = sendBy.millisecondsLeft(atMilliseconds: now)
        guard left > 0 else { return false }
        sendWithinMilliseconds = left
        sendWhileAudience = sendBy.audience
        return true
    }
}

/// What a provider answered: HTTP status, headers and body bytes.
///
/// A transport failure (no status at all) is not a `PushHTTPResponse`; it is an error that
/// `classifyTransportError(_:)` (HeraldCore) turns into a retry.
public struct PushHTTPResponse: Sendable {
    /// HTTP status code, e.g. 200, 410.
    public var status: Int
    /// Response headers in arrival order; names as received (HTTP/2 delivers lower-case).
    public var headers: [(String, String)]
    /// Body bytes: empty for an APNs 200, JSON for provider errors, maybe HTML for a Google 502.
    public var body: [UInt8]
    /// The connection the answer came on, when the client names its connections (the native
    /// client does; libcurl's does not: nil): what `PushTransport.retireConnection(_:)` takes
    /// when the answer says that connection is unusable (APNs `Shutdown`, ADR 0018).
    public var connection: PushConnectionID?

    public init(status: Int, headers: [(String, String)], body: [UInt8], connection: PushConnectionID? = nil) {
        self.status = status
        self.headers = headers
        self.body = body
        self.connection = connection
    }

    /// The first value of a header, matched case-insensitively (RFC 9110 §5.1), or `nil`.
    /// Leading and trailing spaces of the value are trimmed.
    public func header(_ name: String) -> String? {
        guard let value = headers.first(where: { Self.sameASCIIIgnoringCase($0.0, name) })?.1 else { return nil }
        return value.trimmingSpaces()
    }

    /// Whether two header names are equal with ASCII letters compared without case: what
    /// `lowercased()` on both compared, for header names (tokens, RFC 9110 §5.6.2), without making
    /// two strings per header (issue 17: read on every push's answer). A non-ASCII byte is compared
    /// as it is.
    static func sameASCIIIgnoringCase(_ a: String, _ b: String) -> Bool {
        var a = a.utf8.makeIterator(), b = b.utf8.makeIterator()
        while true {
            switch (a.next(), b.next()) {
            case (nil, nil): return true
            case let (x?, y?):
                if x == y { continue }
                // Equal but for case only when both are the same letter: set the case bit and check it is a letter.
                guard x | 0x20 == y | 0x20, (x | 0x20) &- 0x61 < 26 else { return false }
            default: return false
            }
        }
    }
}

/// One connection of an HTTP/2 push client (`NativeHTTP2Client`: its connection number, unique
/// for the client's life), as an answer names it (`PushHTTPResponse.connection`).
public struct PushConnectionID: Hashable, Sendable, CustomStringConvertible {
    /// The client's number for the connection (from 1, never reused).
    public let rawValue: UInt64

    public init(_ rawValue: UInt64) { self.rawValue = rawValue }

    public var description: String { "connection \(rawValue)" }
}
