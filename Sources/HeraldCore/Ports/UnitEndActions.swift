import Synchronization
import Dispatch

/// What a write unit's body asked to run once the unit has ended
/// (`StorageTransaction.whenEnded`), kept by a storage adapter. Confined to the adapter's thread
/// or queue for the unit: filled by the body, run right after its COMMIT or ROLLBACK, before the
/// unit's completion.
public final class UnitEndActions {
    private var actions: [(Bool) -> Void] = []

    public init() {}

    /// Keeps `action` to run when the unit ends.
    public func append(_ action: @escaping (Bool) -> Void) { actions.append(action) }

    /// Runs every kept action once, in the order kept, told whether the unit committed.
    public func run(committed: Bool) {
        guard !actions.isEmpty else { return }
        let kept = actions
        actions = []
        for action in kept { action(committed) }
    }
}

/// Blocks the calling thread until `submit`'s completion delivers a result, for the synchronous
/// faces of the storage ports (start-up, the CLI, tests).
/// - Important: never on the queue that runs the completion, nor on an event loop.
/// - Throws: the error the completion delivered.
public func waitForCompletion<T: Sendable>(_ submit: (@escaping @Sendable (Result<T, any Error>) -> Void) -> Void) throws -> T {
    let done = DispatchSemaphore(value: 0)
    let box = Mutex<Result<T, any Error>?>(nil)
    submit { result in
        box.withLock { $0 = result }
        done.signal()
    }
    done.wait()
    return try box.withLock { $0! }.get()
}
