/// A retention purge that stopped on a storage error: the batches before it are deleted (and
/// counted); the next run goes on from there.
public struct BatchedPurgeFailure: Error {
    /// Rows deleted before the error.
    public let purged: Int
    public let error: any Error
}

extension Storage {
    /// Deletes what a retention let go in short writes, so calls and pushes go between them: runs
    /// `deleteBatch` (which deletes at most `batch` rows and says how many) as one write unit after
    /// another, until one deletes fewer than `batch` or `stopping` answers true (checked before
    /// each unit: a stop waits for one batch at most). `counted` is told each unit's count as it
    /// commits. Blocks: not on an event loop.
    /// - Returns: rows deleted.
    /// - Throws: `BatchedPurgeFailure` on the first storage error.
    @discardableResult
    public func purgeInBatches(of batch: Int, stopping: () -> Bool, counted: (Int) -> Void = { _ in },
                               _ deleteBatch: @escaping @Sendable (any StorageTransaction) throws -> Int) throws(BatchedPurgeFailure) -> Int {
        var purged = 0
        while !stopping() {
            let count: Int
            do {
                count = try writeSync(deleteBatch)
            } catch {
                throw BatchedPurgeFailure(purged: purged, error: error)
            }
            purged += count
            counted(count)
            if count < batch { break }
        }
        return purged
    }
}
