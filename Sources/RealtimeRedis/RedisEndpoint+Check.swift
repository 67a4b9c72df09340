extension RedisEndpoint {
    /// Connects once and selects the database, reads Redis's memory policy, then closes: what a
    /// node checks at start, so a database Redis does not have (`redis://…/99` on a server with
    /// the default 16) stops the start instead of leaving a node that is never ready, and a Redis
    /// that may evict Herald's keys is named. Blocks up to the connect timeout.
    /// - Parameter connectTimeoutMilliseconds: bound on the TCP connect (and on `INFO`'s answer).
    /// - Returns: the memory policy, or nil when Redis would not say (`INFO` renamed or refused).
    /// - Throws: `RedisError.databaseRefused` when Redis answers and refuses the database;
    ///   `.connectFailed` (or another I/O error) when it cannot be reached, which may pass.
    @discardableResult
    public func check(connectTimeoutMilliseconds: Int) throws(RedisError) -> RedisMemoryPolicy? {
        let connection = try RedisConnection(self, connectTimeoutMilliseconds: connectTimeoutMilliseconds,
                                             readTimeoutMilliseconds: connectTimeoutMilliseconds)
        guard let info = try? connection.command([Array("INFO".utf8), Array("memory".utf8)]).text else { return nil }
        return RedisMemoryPolicy(info: info)
    }
}

/// Redis's memory limit and what it does on reaching it (`INFO memory`'s `maxmemory` and
/// `maxmemory_policy`). Herald's channel keys carry a TTL (the history TTL), so a `volatile-*`
/// policy (managed Redis services' default) evicts them first and an `allkeys-*` one may evict
/// any of them: a channel's history or meta hash, even the stream sequence (operations.md,
/// "Several nodes").
public struct RedisMemoryPolicy: Equatable, Sendable {
    /// `maxmemory` in bytes; 0 is no limit, so nothing is ever evicted.
    public let maxmemoryBytes: Int64
    /// `maxmemory_policy`, e.g. `noeviction`, `volatile-lru`, `allkeys-lru`.
    public let policy: String

    /// Whether Redis may evict keys when it reaches its limit: a limit is set and the policy is
    /// not `noeviction`.
    public var mayEvict: Bool { maxmemoryBytes > 0 && policy != "noeviction" }

    public init(maxmemoryBytes: Int64, policy: String) {
        self.maxmemoryBytes = maxmemoryBytes
        self.policy = policy
    }

    /// Reads the two fields from `INFO memory`'s text (`name:value` lines); nil when one is missing.
    public init?(info: String) {
        var maxmemory: Int64?
        var policy: String?
        for line in info.split(whereSeparator: \.isNewline) {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let value = line[line.index(after: colon)...]
            switch line[..<colon] {
            case "maxmemory": maxmemory = Int64(value)
            case "maxmemory_policy": policy = String(value)
            default: continue
            }
        }
        guard let maxmemory, let policy else { return nil }
        self.init(maxmemoryBytes: maxmemory, policy: policy)
    }
}
