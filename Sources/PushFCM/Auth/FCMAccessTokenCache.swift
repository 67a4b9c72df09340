import HeraldCore
import PushHTTP
import Synchronization

/// The FCM OAuth2 access-token cache (SPEC PU-2; push-providers.md §2.4, §6.2): one token per
/// service account, refreshed 5 minutes before it expires, one refresh in flight at a time
/// (callers arriving meanwhile get its result), dropped on a `401` so the next send refreshes once.
///
/// Transport-agnostic: it is given a `fetch` closure that obtains a new token (normally
/// `FCMAccessTokenCache.fetcher(credentials:send:)`: sign an assertion, POST it, parse the answer)
/// and calls back exactly once. Timeouts belong to that transport: a fetch that never calls back
/// leaves its waiters waiting.
///
/// The decisions live in `FCMAccessTokenStateMachine`; this class adds the lock and runs callbacks.
///
/// # Thread safety
/// State is behind one `Mutex`. `fetch` and every completion run **outside** the lock, so a fetch
/// that answers synchronously, or a completion that asks for a token again, cannot deadlock.
/// Completions run on the caller's thread when a token is at hand, otherwise on the thread that
/// delivers the fetch result.
public final class FCMAccessTokenCache: Sendable {
    /// Gets a fresh token and calls back once with it (or the error).
    public typealias Fetch = @Sendable (_ completion: @escaping @Sendable (Result<FCMAccessTokenGrant, any Error>) -> Void) -> Void
    /// Receives the access token, or why there is none.
    public typealias Completion = @Sendable (Result<String, FCMTokenError>) -> Void

    private let machine: Mutex<FCMAccessTokenStateMachine<Completion>>
    private let fetch: Fetch
    private let clock: UnixClock

    /// - Parameters:
    ///   - refreshMargin: seconds before expiry at which a background refresh starts (default 5 min).
    ///   - failureCooldown: seconds during which a failed fetch is not retried (default 10).
    ///   - clock: UNIX seconds; tests pass a fake.
    ///   - fetch: obtains a new token; see `fetcher(credentials:clock:send:)`.
    public init(refreshMargin: Int = 300, failureCooldown: Int = 10, clock: @escaping UnixClock = systemUnixClock, fetch: @escaping Fetch) {
        machine = Mutex(FCMAccessTokenStateMachine(refreshMargin: refreshMargin, failureCooldown: failureCooldown))
        self.fetch = fetch
        self.clock = clock
    }

    /// Calls `completion` with a usable access token, fetching one first if needed. Within the
    /// failure cool-down it fails at once: `.rejected` again after a refused assertion, otherwise
    /// `.coolingDown` with the seconds until a fetch is tried again.
    public func withAccessToken(_ completion: @escaping Completion) {
        let now = clock()
        let action = machine.withLock { $0.request(now: now, waiter: completion) }
        switch action {
        case .use(let token):
            completion(.success(token))
        case .useAndFetch(let token, let generation):
            startFetch(generation: generation)
            completion(.success(token))
        case .waitAndFetch(let generation):
            startFetch(generation: generation)
        case .wait:
            break
        case .fail(.rejected(let status, let code, let description)):
            // A configuration error stays one: the caller dead-letters, however soon it asks again.
            completion(.failure(.rejected(status: status, error: code, description: description)))
        case .fail(let error):
            // Tell the caller when asking again can help: the cool-down's end.
            let left = machine.withLock { $0.coolDownLeft(now: now) } ?? 1
            completion(.failure(.coolingDown(secondsLeft: max(left, 1), detail: "\(error)")))
        }
    }

    /// A usable access token, fetching one first if needed.
    ///
    /// - Throws: `FCMTokenError` from the fetch, or `.coolingDown` while a failed fetch's
    ///   cool-down lasts (`.rejected` stays `.rejected`).
    public func accessToken() async throws(FCMTokenError) -> String {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<String, FCMTokenError>, Never>) in
            withAccessToken { continuation.resume(returning: $0) }
        }
        return try result.get()
    }

    /// FCM answered `401 UNAUTHENTICATED` to a send that used `token`.
    ///
    /// - Returns: `true` if `token` was dropped (the next call fetches a new one); `false` if it was
    ///   already replaced. Either way, retry the send once with a token from `withAccessToken`.
    @discardableResult
    public func invalidate(token: String) -> Bool {
        machine.withLock { $0.invalidate(rejected: token) }
    }

    private func startFetch(generation: Int) {
        fetch { [self] result in
            let mapped = result.mapError { error -> FCMTokenError in
                (error as? FCMTokenError) ?? .failed(detail: String(describing: error))
            }
            let now = clock()
            let (waiters, outcome) = machine.withLock { $0.fetchFinished(generation: generation, result: mapped, now: now) }
            for waiter in waiters { waiter(outcome) }
        }
    }

    /// The standard `fetch`: sign an assertion for `credentials`, POST it with `send`, parse the answer.
    ///
    /// - Parameters:
    ///   - credentials: the service account.
    ///   - clock: for the assertion's `iat`.
    ///   - send: the transport: performs one request and calls back once with the response or a
    ///     transport error.
    public static func fetcher(credentials: FCMCredentials, clock: @escaping UnixClock = systemUnixClock,
                               send: @escaping @Sendable (PushHTTPRequest, @escaping @Sendable (Result<PushHTTPResponse, any Error>) -> Void) -> Void) -> Fetch {
        { completion in
            let request: PushHTTPRequest
            do {
                request = try FCMAssertion.tokenRequest(credentials: credentials, now: clock())
            } catch {
                completion(.failure(FCMTokenError.failed(detail: "signing the assertion failed: \(error)")))
                return
            }
            send(request) { result in
                switch result {
                case .success(let response):
                    completion(Result { () throws(FCMTokenError) -> FCMAccessTokenGrant in
                        try FCMAssertion.parseTokenResponse(response)
                    }.mapError { $0 as any Error })
                case .failure(let error):
                    let rejected = (error as? any PushTransportFailure)?.rejectedCertificate
                    completion(.failure(FCMTokenError.unanswered(detail: "token request failed: \(error)", rejectedCertificate: rejected)))
                }
            }
        }
    }
}
