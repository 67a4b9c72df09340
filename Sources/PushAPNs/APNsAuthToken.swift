import HeraldCore
import PushHTTP
import Synchronization

/// The APNs provider token cache: one ES256 JWT per (team, key), shared by every request
/// (SPEC PU-1; push-providers.md §1.5).
///
/// Token: header `{"alg":"ES256","kid":<key id>}`, claims `{"iat":<unix s>,"iss":<team id>}` —
/// exactly the fields Apple lists, no `typ`/`exp`.
///
/// Timing rules, from Apple: APNs refuses a token whose `iat` is more than 1 h old
/// (`403 ExpiredProviderToken`) and a token changed more often than every 20 min on a connection
/// (`429 TooManyProviderTokenUpdates`, connection unusable for a while). So:
/// - **Scheduled refresh:** a token is reused until it is `refreshAge` old (default **40 min**,
///   SPEC PU-1's "about every 40 min"; the issue's ~50 min is also inside Apple's 20–60 window —
///   40 leaves 20 min of slack for clock skew and slow queues), then the next `current()` signs
///   a new one. Routine changes are therefore never closer than 40 min.
/// - **Forced refresh** (`invalidate(rejected:)` after `ExpiredProviderToken`): a rejected token is
///   never used again. It is replaced **once**, whatever its age — many in-flight 403s for the same
///   token cause one new token. Apple's 20 minutes are a rate guideline for routine changes, not a
///   reason to keep sending with a token APNs has declared expired (the provider double, like
///   APNs, always accepts the replacement of an expired token), so a second rejection within 20
///   minutes is refreshed too. Only a loop is held back: forced refreshes are at least
///   `minimumForcedRefreshInterval` apart (default **60 s**); a token rejected sooner is dropped at
///   once and `current()` throws `.refreshDeferred` until the interval has passed (the queue
///   re-schedules those pushes for then, without counting the attempt). Rejections that keep coming
///   mean our clock and Apple's disagree: check the server clock.
///
/// Create one per credential set and share it process-wide (APNSwift #34 was a token per request).
///
/// # Thread safety
/// All state is behind one `Mutex`; signing (~50 µs) happens under it so that racing callers never
/// sign two tokens for one refresh.
public final class APNsAuthToken: Sendable {
    /// What `invalidate(rejected:)` did.
    public enum Invalidation: Sendable, Equatable {
        /// The rejected token was dropped; the next `current()` signs a fresh one. Retry once.
        case willRegenerate
        /// The rejected token had already been replaced (another request saw the same 403 first).
        /// Retry once with `current()`.
        case alreadyReplaced
        /// The rejected token was dropped, but the previous forced refresh was less than
        /// `minimumForcedRefreshInterval` ago: `current()` signs the replacement in `secondsLeft`
        /// seconds and throws `.refreshDeferred` until then. Retry after that.
        case deferred(secondsLeft: Int)
    }

    private struct State {
        var token: String?
        var issuedAt = 0
        /// When the last forced refresh dropped a token, if ever.
        var lastForcedRefresh: Int?
        /// Set when a rejected token was dropped sooner than `minimumForcedRefreshInterval` after
        /// the previous forced refresh: no token is signed before this time (unix s).
        var noTokenUntil: Int?
    }

    public let keyID: String
    public let teamID: String
    /// Age in seconds at which the token is replaced on the next use.
    public let refreshAge: Int
    /// Seconds that must pass between two forced refreshes (a guard against a refresh loop).
    public let minimumForcedRefreshInterval: Int
    private let signer: ES256Signer
    private let clock: UnixClock
    private let state = Mutex(State())

    /// - Parameters:
    ///   - keyID: JWT header `kid` (`APNS_KEY_ID`).
    ///   - teamID: JWT claim `iss` (`APNS_TEAM_ID`).
    ///   - signer: the `.p8` key.
    ///   - refreshAge: seconds; must be in 20…59 min (1200…3540), Apple's window.
    ///   - minimumForcedRefreshInterval: seconds between two forced refreshes (default 60).
    ///   - clock: UNIX seconds; tests pass a fake.
    public init(keyID: String, teamID: String, signer: ES256Signer,
                refreshAge: Int = 40 * 60, minimumForcedRefreshInterval: Int = 60, clock: @escaping UnixClock = systemUnixClock) {
        precondition((20 * 60...59 * 60).contains(refreshAge), "APNs tokens must live 20 to 59 minutes")
        precondition((0...refreshAge).contains(minimumForcedRefreshInterval), "minimumForcedRefreshInterval must be in 0...refreshAge")
        self.keyID = keyID
        self.teamID = teamID
        self.signer = signer
        self.refreshAge = refreshAge
        self.minimumForcedRefreshInterval = minimumForcedRefreshInterval
        self.clock = clock
    }

    /// A cache for `credentials`' key and team.
    public convenience init(credentials: APNsCredentials, clock: @escaping UnixClock = systemUnixClock) {
        self.init(keyID: credentials.keyID, teamID: credentials.teamID, signer: credentials.signer, clock: clock)
    }

    /// The provider token for `authorization: bearer <token>`, signed now if there is none yet or
    /// the cached one is `refreshAge` old.
    ///
    /// - Throws: `APNsAuthTokenError.refreshDeferred` while a rejected token's replacement must
    ///   wait (`Invalidation.deferred`); `.signing` if OpenSSL fails to sign.
    public func current() throws(APNsAuthTokenError) -> String {
        let now = clock()
        return try state.withLock { (state: inout State) throws(APNsAuthTokenError) -> String in
            // A clock that went backwards (age < 0) keeps the token: its iat is still the newest we have.
            if let token = state.token, now - state.issuedAt < refreshAge { return token }
            if let until = state.noTokenUntil {
                // `now >= last` as in `invalidate`: a clock stepped back does not hold sends forever.
                if now < until, let last = state.lastForcedRefresh, now >= last {
                    throw .refreshDeferred(secondsLeft: until - now)
                }
                state.noTokenUntil = nil
                state.lastForcedRefresh = now
            }
            let token: String
            do throws(JWTSigningError) {
                token = try JWTEncoder.encode(header: ["kid": .string(keyID)],
                                              claims: ["iss": .string(teamID), "iat": .int(Int64(now))],
                                              signer: signer)
            } catch {
                throw .signing(error)
            }
            state.token = token
            state.issuedAt = now
            return token
        }
    }

    /// Reports that APNs refused `token` with `403 ExpiredProviderToken`: it is never used again.
    ///
    /// Passing the refused token, not just "invalidate", is what makes many in-flight requests
    /// that all got the same 403 cause a single new token.
    ///
    /// - Returns: whether to retry now with `current()`, or when (see `Invalidation`).
    public func invalidate(rejected token: String) -> Invalidation {
        let now = clock()
        return state.withLock { state in
            guard state.token == token else { return .alreadyReplaced }
            state.token = nil
            if let last = state.lastForcedRefresh, now >= last, now - last < minimumForcedRefreshInterval {
                let until = last + minimumForcedRefreshInterval
                state.noTokenUntil = until
                return .deferred(secondsLeft: until - now)
            }
            state.lastForcedRefresh = now
            return .willRegenerate
        }
    }

    /// The `iat` of the cached token, or `nil` when none is cached. For logs and tests.
    public var issuedAt: Int? { state.withLock { $0.token == nil ? nil : $0.issuedAt } }
}

/// Why `APNsAuthToken.current()` has no token to give.
public enum APNsAuthTokenError: Error, Equatable, Sendable {
    /// A rejected token's replacement may be signed only in `secondsLeft` seconds (forced
    /// refreshes are `minimumForcedRefreshInterval` apart): send after that.
    case refreshDeferred(secondsLeft: Int)
    /// OpenSSL failed to sign.
    case signing(JWTSigningError)
}
