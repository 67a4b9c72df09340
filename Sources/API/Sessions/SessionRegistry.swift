import HeraldCore
import Synchronization

/// Ended sessions, in memory, so an ended session's access tokens are refused at once (DV-4)
/// without a database read per request. Loaded from the database at start; every end adds to it.
/// Keyed by app and sid (ADR 0006): app A's ended `s1` refuses nothing of another app's.
public final class SessionRegistry: Sendable {
    private let ended = Mutex<Set<SessionKey>>([])

    /// - Parameter ended: the ended sessions stored. A `sid` no token or route may name any more
    ///   (not NFC, stored before ADR 0019) is left out: the set compares by canonical equivalence,
    ///   so an ended `e` + U+0301 would refuse the tokens of the live session `é` (U+00E9), which
    ///   storage keeps apart.
    public init(ended: [SessionKey] = []) {
        let usable = ended.filter { AccessClaims.isUsableSessionID($0.sid) }
        self.ended.withLock { $0 = Set(usable) }
    }

    /// True when app `app`'s session `sid` was ended.
    public func isEnded(_ sid: String, app: AppID) -> Bool {
        ended.withLock { $0.contains(SessionKey(app: app.rawValue, sid: sid)) }
    }

    /// Records that app `app`'s session `sid` ended.
    /// - Returns: false when it was already known as ended.
    @discardableResult
    public func markEnded(_ sid: String, app: AppID) -> Bool {
        ended.withLock { $0.insert(SessionKey(app: app.rawValue, sid: sid)).inserted }
    }
}
