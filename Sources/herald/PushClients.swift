import PushHTTP
import Synchronization

/// The HTTP/2 clients one set of push providers sends through (issue 17): APNs and FCM (sends and
/// FCM's OAuth token exchange) go through Herald's own `NativeHTTP2Client`; Expo (gzip bodies and
/// answers) and Web Push (any endpoint, possibly HTTP/1.1 or loopback `http://`) through the libcurl
/// `HTTP2Client`, which starts on its first request, so a process without those providers runs no
/// libcurl thread.
final class PushClients: Sendable {
    let native: NativeHTTP2Client
    private let configuration: HTTP2Client.Configuration
    private let curl = Mutex<(client: HTTP2Client?, stopped: Bool)>((nil, false))

    /// - Throws: `PushTransportError` when the native client cannot start (see its `init`).
    init(configuration: HTTP2Client.Configuration) throws(PushTransportError) {
        self.configuration = configuration
        native = try NativeHTTP2Client(configuration: configuration)
    }

    /// The transport for APNs and FCM.
    var apnsFCM: any PushTransport { HTTP2PushTransport(client: native) }
    /// The transport for Expo and Web Push (libcurl, started on first use).
    var general: any PushTransport { LazyCurlTransport(owner: self) }

    /// The libcurl client, started now if it is not running; `.shutdown` after `shutdown()`.
    fileprivate func curlClient() throws(PushTransportError) -> HTTP2Client {
        let result: Result<HTTP2Client, PushTransportError> = curl.withLock { state in
            if state.stopped { return .failure(.shutdown) }
            if let client = state.client { return .success(client) }
            do throws(PushTransportError) {
                let client = try HTTP2Client(configuration: configuration)
                state.client = client
                return .success(client)
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// Shuts both clients down (every pending completion runs with `.shutdown`).
    func shutdown() {
        native.shutdown()
        curl.withLock { state -> HTTP2Client? in
            state.stopped = true
            return state.client
        }?.shutdown()
    }
}

/// Sends through `PushClients`' libcurl client, starting it on the first request.
private struct LazyCurlTransport: PushTransport {
    let owner: PushClients

    func send(_ request: PushHTTPRequest, completion: @escaping @Sendable (Result<PushHTTPResponse, any Error>) -> Void) {
        do {
            let client = try owner.curlClient()
            client.sendReportingInfo(request) { result, _ in completion(result.mapError { $0 }) }
        } catch {
            completion(.failure(error))
        }
    }
}
