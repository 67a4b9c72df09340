import Dispatch
import HeraldCore
import Realtime
import Synchronization

/// An error line for a failure every call meets while an engine is down (the broker, the
/// database): each such call already has its `request` line (5xx), so the cause is written once
/// per 30 s, with `repeated`, how many it held back, instead of once a call.
final class ThrottledErrorLog: Sendable {
    let message: String
    private let throttle = Mutex(LogThrottle())

    init(_ message: String) {
        self.message = message
    }

    /// Writes the line for `error` unless one was written less than 30 s ago.
    func write(_ error: any Error) {
        let now = DispatchTime.now().uptimeNanoseconds
        guard let held = throttle.withLock({ $0.admit(now: now) }) else { return }
        var metadata = [("error", "\(error)")]
        if held > 0 { metadata.append(("repeated", String(held))) }
        Log.log(.error, message, metadata: metadata)
    }
}
