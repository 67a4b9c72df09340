/// An HTTP/2 push client (`NativeHTTP2Client` for APNs and FCM, the libcurl `HTTP2Client` for the
/// rest) as the production `PushTransport` (Transport/PushTransport.swift).
///
/// An adapter rather than a conformance on the clients themselves: a second `send(_:completion:)` that
/// differs only in the closure's error type would make every untyped call `client.send(r) { … }`
/// ambiguous. Failures reach `any Error` as `PushTransportError` (cast back to inspect them).
public struct HTTP2PushTransport: PushTransport {
    public let client: any HTTP2PushClient

    public init(client: any HTTP2PushClient) { self.client = client }

    public func send(_ request: PushHTTPRequest,
                     completion: @escaping @Sendable (Result<PushHTTPResponse, any Error>) -> Void) {
        client.sendForTransport(request, completion: completion)
    }

    public func retireConnection(_ connection: PushConnectionID) {
        client.retireConnection(connection)
    }
}
