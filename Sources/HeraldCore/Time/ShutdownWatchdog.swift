import Dispatch
import Synchronization

/// Keeps the shutdown's deadlines (operations.md, Signals) when a step cannot be interrupted: a
/// thread blocked in `write()` on a frozen volume, or waiting on a storage queue behind one.
/// Each step is `arm`ed with its deadline; when one passes before the next `arm` or `disarm`,
/// `expired` is called with the step's name (the process logs it and exits non-zero).
///
/// # Thread safety
/// Sendable: the current step is behind a mutex; `check` may run on any thread (a timer's).
public final class ShutdownWatchdog: Sendable {
    private struct Step {
        let name: String
        let deadline: UInt64
    }

    private let clock: any Clock
    private let expired: @Sendable (_ step: String) -> Void
    private let step = Mutex<Step?>(nil)
    private let fired = Atomic<Bool>(false)

    /// - Parameters:
    ///   - clock: monotonic time for the deadlines.
    ///   - expired: called once, with the name of the step that outlived its deadline.
    public init(clock: any Clock = SystemClock(), expired: @escaping @Sendable (_ step: String) -> Void) {
        self.clock = clock
        self.expired = expired
    }

    /// Starts a thread that checks every `everyMilliseconds` (a blocked shutdown cannot call `check`).
    public func start(everyMilliseconds: Int = 100) {
        tick(on: DispatchQueue(label: "herald.shutdown.watchdog"), everyMilliseconds: everyMilliseconds)
    }

    private func tick(on queue: DispatchQueue, everyMilliseconds: Int) {
        queue.asyncAfter(deadline: .now() + .milliseconds(everyMilliseconds)) { [self] in
            if !check() { tick(on: queue, everyMilliseconds: everyMilliseconds) }
        }
    }

    /// The step now running must end within `seconds`.
    public func arm(_ name: String, seconds: Double) {
        let deadline = clock.monotonicNanoseconds &+ UInt64(max(seconds, 0) * 1_000_000_000)
        step.withLock { $0 = Step(name: name, deadline: deadline) }
    }

    /// The shutdown finished: nothing is watched any more.
    public func disarm() {
        step.withLock { $0 = nil }
    }

    /// Calls `expired` if the armed step's deadline passed (once in all).
    /// - Returns: whether it has fired (now or before).
    @discardableResult
    public func check() -> Bool {
        if fired.load(ordering: .relaxed) { return true }
        let now = clock.monotonicNanoseconds
        guard let late = step.withLock({ step -> String? in
            guard let current = step, current.deadline <= now else { return nil }
            return current.name
        }) else { return false }
        if fired.exchange(true, ordering: .relaxed) { return true }
        expired(late)
        return true
    }
}
