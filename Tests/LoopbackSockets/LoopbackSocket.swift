import Glibc

/// TCP sockets on 127.0.0.1 at a port the kernel picks (port 0), for tests: a listener that
/// never answers, a port nothing listens on, a free port for a child server to bind.
public enum LoopbackSocket {
    /// Opens a TCP socket bound to 127.0.0.1 port 0, listening when `backlog` is given.
    /// - Parameter backlog: the `listen(2)` queue; nil: bound only.
    /// - Returns: the descriptor (the caller closes it) and the port the kernel chose; nil when
    ///   `socket`, `bind`, `getsockname` or `listen` failed (the descriptor is then closed).
    public static func open(listening backlog: Int32? = nil) -> (fd: Int32, port: Int)? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound, backlog.map({ listen(fd, $0) == 0 }) ?? true else {
            close(fd)
            return nil
        }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// A port free on 127.0.0.1 right now: bound, then closed. Nothing listens on it; a child
    /// server may bind it next (another process may take it first: retry on "address in use").
    public static func freePort() -> Int? {
        guard let (fd, port) = open() else { return nil }
        close(fd)
        return port
    }
}
