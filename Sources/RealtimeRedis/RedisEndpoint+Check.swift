extension RedisEndpoint {
    /// Connects once and selects the database, then closes: what a node checks at start, so a
    /// database Redis does not have (`redis://…/99` on a server with the default 16) stops the
    /// start instead of leaving a node that is never ready. Blocks up to the connect timeout.
    /// - Parameter connectTimeoutMilliseconds: bound on the TCP connect.
    /// - Throws: `RedisError.databaseRefused` when Redis answers and refuses the database;
    ///   `.connectFailed` (or another I/O error) when it cannot be reached, which may pass.
    public func check(connectTimeoutMilliseconds: Int) throws(RedisError) {
        _ = try RedisConnection(self, connectTimeoutMilliseconds: connectTimeoutMilliseconds,
                                readTimeoutMilliseconds: connectTimeoutMilliseconds)
    }
}
