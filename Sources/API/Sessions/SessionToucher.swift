import HeraldCore
import Realtime

/// Creates or refreshes the session row of a client that connects (DV-4: "a session row is
/// created or refreshed from the access token"), without holding up the request: the write is
/// queued on the database writer and its failure only logged.
struct SessionToucher: Sendable {
    let database: any Storage

    func touch(_ claims: AccessClaims) {
        guard let sid = claims.sessionID else { return }
        let user = claims.subject, app = claims.app.rawValue
        let expiresAt = claims.sessionExpiresAt.map { $0 * 1000 }
        database.write({ tx in
            _ = try tx.sessions.touch(sid: sid, userID: user, app: app, expiresAt: expiresAt, now: unixMilliseconds())
        }) { result in
            if case .failure(let error) = result { Log.warning("could not record session", ["error": "\(error)"]) }
        }
    }
}
