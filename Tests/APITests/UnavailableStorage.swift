import HeraldCore

/// A `Storage` whose every unit of work fails with `.unavailable`: for tests of routes that must
/// not touch storage (routing, static files), so they need no storage adapter.
struct UnavailableStorage: Storage {
    let pushRotations = PushJobRotation.Count()

    func write<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) throws -> T,
                            completion: @escaping @Sendable (Result<T, any Error>) -> Void) {
        completion(.failure(StorageError.unavailable(message: "no storage in this test")))
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) throws -> T,
                           completion: @escaping @Sendable (Result<T, any Error>) -> Void) {
        completion(.failure(StorageError.unavailable(message: "no storage in this test")))
    }

    func writeSync<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) throws -> T) throws -> T {
        throw StorageError.unavailable(message: "no storage in this test")
    }

    func readSync<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) throws -> T) throws -> T {
        throw StorageError.unavailable(message: "no storage in this test")
    }
}
