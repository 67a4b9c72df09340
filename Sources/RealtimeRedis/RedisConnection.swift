import CHiredis
import CHiredisShim
import Glibc

/// One hiredis connection on the synchronous API. Not thread-safe: owned by one thread (a
/// `RedisCommander`'s or the `RedisSubscriber`'s), which is the shape hiredis 0.14 supports (a
/// context belongs to one thread). After any I/O error hiredis marks the context dead; the owner
/// then drops it and connects a new one.
final class RedisConnection {
    private let context: UnsafeMutablePointer<redisContext>

    /// Connects and selects the endpoint's database.
    /// - Parameters:
    ///   - connectTimeoutMilliseconds: bound on the TCP connect.
    ///   - readTimeoutMilliseconds: socket read/write timeout (SO_RCVTIMEO); nil leaves reads
    ///     blocking, for a caller that polls the descriptor itself.
    /// - Throws: `RedisError.connectFailed`, or `.databaseRefused` when Redis refuses the database.
    init(_ endpoint: RedisEndpoint, connectTimeoutMilliseconds: Int, readTimeoutMilliseconds: Int?) throws(RedisError) {
        try RedisLibrary.load()
        guard let context = redisConnectWithTimeout(endpoint.host, endpoint.port, Self.timeval(connectTimeoutMilliseconds)) else {
            throw .connectFailed("out of memory")
        }
        self.context = context
        // Thrown after every stored property is set, so deinit frees the context.
        if context.pointee.err != 0 { throw .connectFailed(Self.errorText(context)) }
        _ = redisEnableKeepAlive(context)
        if let readTimeoutMilliseconds {
            _ = redisSetTimeout(context, Self.timeval(readTimeoutMilliseconds))
        }
        if endpoint.database != 0 {
            let reply: RedisReply
            do {
                reply = try command(["SELECT", String(endpoint.database)].map { Array($0.utf8) })
            } catch {
                throw .connectFailed("SELECT \(endpoint.database): \(error)")
            }
            if case .error(let message) = reply { throw .databaseRefused(database: endpoint.database, reason: message) }
        }
    }

    deinit {
        redisFree(context)
    }

    /// The socket, for a caller that polls it (the subscriber).
    var fileDescriptor: Int32 { context.pointee.fd }

    /// Sends one command and waits for its reply (an error reply is returned, not thrown).
    /// - Throws: `.timedOut` when the read timeout passed, `.connectionLost` on any other I/O error.
    func command(_ arguments: [[UInt8]]) throws(RedisError) -> RedisReply {
        try append(arguments)
        return try readReply()
    }

    /// Sends several commands in one write and reads their replies in order (a pipeline).
    func pipeline(_ commands: [[[UInt8]]]) throws(RedisError) -> [RedisReply] {
        for arguments in commands { try append(arguments) }
        var replies: [RedisReply] = []
        replies.reserveCapacity(commands.count)
        for _ in commands { replies.append(try readReply()) }
        return replies
    }

    /// Queues a command in hiredis's output buffer (written by `readReply` or `flush`).
    func append(_ arguments: [[UInt8]]) throws(RedisError) {
        // One contiguous copy of every argument: hiredis wants `const char **` plus lengths.
        var bytes: [UInt8] = []
        bytes.reserveCapacity(arguments.reduce(0) { $0 + $1.count })
        var lengths: [Int] = []
        lengths.reserveCapacity(arguments.count)
        for argument in arguments {
            bytes.append(contentsOf: argument)
            lengths.append(argument.count)
        }
        if bytes.isEmpty { bytes.append(0) }  // a valid base pointer even for empty arguments
        let status = bytes.withUnsafeBufferPointer { buffer -> Int32 in
            buffer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: buffer.count) { base in
                var pointers: [UnsafePointer<CChar>?] = []
                pointers.reserveCapacity(arguments.count)
                var offset = 0
                for length in lengths {
                    pointers.append(base + offset)
                    offset += length
                }
                return pointers.withUnsafeMutableBufferPointer { argv in
                    lengths.withUnsafeBufferPointer { argvlen in
                        redisAppendCommandArgv(context, Int32(arguments.count), argv.baseAddress, argvlen.baseAddress)
                    }
                }
            }
        }
        if status != REDIS_OK { throw failure() }
    }

    /// Writes whatever hiredis has buffered (blocking socket: loops until done).
    func flush() throws(RedisError) {
        var done: Int32 = 0
        while done == 0 {
            if redisBufferWrite(context, &done) != REDIS_OK { throw failure() }
        }
    }

    /// Flushes, then blocks for the next reply (bounded by the read timeout, if one was set).
    func readReply() throws(RedisError) -> RedisReply {
        var raw: UnsafeMutableRawPointer?
        guard redisGetReply(context, &raw) == REDIS_OK, let raw else { throw failure() }
        defer { freeReplyObject(raw) }
        return Self.convert(raw.assumingMemoryBound(to: redisReply.self))
    }

    /// Reads what the socket has (once; call when poll says it is readable).
    /// - Throws: `.connectionLost` on EOF or a read error.
    func readAvailable() throws(RedisError) {
        if redisBufferRead(context) != REDIS_OK { throw failure() }
    }

    /// The next reply already read into hiredis's buffer, without touching the socket.
    func bufferedReply() throws(RedisError) -> RedisReply? {
        var raw: UnsafeMutableRawPointer?
        guard redisGetReplyFromReader(context, &raw) == REDIS_OK else { throw failure() }
        guard let raw else { return nil }
        defer { freeReplyObject(raw) }
        return Self.convert(raw.assumingMemoryBound(to: redisReply.self))
    }

    private func failure() -> RedisError {
        let reason = Self.errorText(context)
        // hiredis reports a read timeout as an I/O error with EAGAIN's text.
        if context.pointee.err == REDIS_ERR_IO, errno == EAGAIN || errno == EWOULDBLOCK || reason.contains("temporarily unavailable") {
            return .timedOut
        }
        return .connectionLost(reason.isEmpty ? "connection closed" : reason)
    }

    private static func convert(_ reply: UnsafeMutablePointer<redisReply>) -> RedisReply {
        let value = reply.pointee
        switch value.type {
        case REDIS_REPLY_STRING:
            return .string(bytes(value.str, value.len))
        case REDIS_REPLY_STATUS:
            return .status(String(decoding: bytes(value.str, value.len), as: UTF8.self))
        case REDIS_REPLY_ERROR:
            return .error(String(decoding: bytes(value.str, value.len), as: UTF8.self))
        case REDIS_REPLY_INTEGER:
            return .integer(Int64(value.integer))
        case REDIS_REPLY_ARRAY:
            var elements: [RedisReply] = []
            elements.reserveCapacity(value.elements)
            for index in 0..<value.elements {
                if let element = value.element[index] { elements.append(convert(element)) } else { elements.append(.null) }
            }
            return .array(elements)
        default:
            return .null
        }
    }

    private static func bytes(_ pointer: UnsafeMutablePointer<CChar>?, _ length: Int) -> [UInt8] {
        guard let pointer, length > 0 else { return [] }
        return pointer.withMemoryRebound(to: UInt8.self, capacity: length) { Array(UnsafeBufferPointer(start: $0, count: length)) }
    }

    private static func errorText(_ context: UnsafeMutablePointer<redisContext>) -> String {
        withUnsafeBytes(of: context.pointee.errstr) { raw in
            let bytes = raw.prefix { $0 != 0 }
            return String(decoding: bytes, as: UTF8.self)
        }
    }

    private static func timeval(_ milliseconds: Int) -> Glibc.timeval {
        Glibc.timeval(tv_sec: milliseconds / 1000, tv_usec: (milliseconds % 1000) * 1000)
    }
}

/// libhiredis, which Herald opens on first use instead of linking (CDynamicLoad): one process
/// without `HERALD_BROKER` never maps it.
public enum RedisLibrary {
    /// Opens libhiredis once per process; every connection does it first. The server calls it at
    /// start when `HERALD_BROKER` is set, so that a missing library stops it with the reason.
    /// - Throws: `RedisError.connectFailed` naming the soname and the Debian package.
    public static func load() throws(RedisError) {
        if let reason = herald_hiredis_load() {
            throw .connectFailed("libhiredis could not be loaded: \(String(cString: reason))")
        }
    }
}
