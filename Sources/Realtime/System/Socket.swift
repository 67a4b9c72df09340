import CLinux
import Glibc

/// Socket helpers for IPv4/IPv6 TCP listeners and accepted connections.
enum Socket {
    /// Opens a non-blocking listening socket.
    ///
    /// - Parameters:
    ///   - host: a numeric IPv4 or IPv6 address (`127.0.0.1`, `0.0.0.0`, `::`).
    ///   - port: the TCP port; 0 asks the kernel for a free one.
    ///   - reusePort: sets `SO_REUSEPORT` so every event loop can own a listener on the same port.
    ///   - backlog: the `listen(2)` queue length (the kernel caps it at `somaxconn`).
    /// - Returns: the descriptor and the port actually bound.
    /// - Throws: `IOError` from `socket`, `bind`, `listen`, or `.invalidAddress`.
    static func listen(host: String, port: Int, reusePort: Bool, backlog: Int32 = 4096) throws(ListenError) -> (fd: Int32, port: Int) {
        var storage = sockaddr_storage()
        var length: socklen_t
        let family: Int32
        if let v4 = ipv4Address(host, port: port) {
            withUnsafeMutableBytes(of: &storage) { raw in
                raw.storeBytes(of: v4, as: sockaddr_in.self)
            }
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
            family = AF_INET
        } else if let v6 = ipv6Address(host, port: port) {
            withUnsafeMutableBytes(of: &storage) { raw in
                raw.storeBytes(of: v6, as: sockaddr_in6.self)
            }
            length = socklen_t(MemoryLayout<sockaddr_in6>.size)
            family = AF_INET6
        } else {
            throw .invalidAddress(host)
        }
        let fd = Glibc.socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        if fd < 0 { throw .system(IOError("socket", errno: errno)) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        if reusePort {
            setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, socklen_t(MemoryLayout<Int32>.size))
        }
        let bound = withUnsafePointer(to: &storage) { ptr in
            ptr.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, length) }
        }
        if bound != 0 {
            let err = errno
            close(fd)
            throw .system(IOError("bind", errno: err))
        }
        if Glibc.listen(fd, backlog) != 0 {
            let err = errno
            close(fd)
            throw .system(IOError("listen", errno: err))
        }
        return (fd, localPort(fd) ?? port)
    }

    /// The local port of a bound socket.
    static func localPort(_ fd: Int32) -> Int? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let rc = withUnsafeMutablePointer(to: &storage) { ptr in
            ptr.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard rc == 0 else { return nil }
        return port(of: storage)
    }

    /// The numeric address of a peer, as text (`127.0.0.1`, `::1`).
    static func address(of storage: sockaddr_storage) -> String {
        var copy = storage
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        switch Int32(storage.ss_family) {
        case AF_INET:
            withUnsafePointer(to: &copy) { ptr in
                ptr.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { sin in
                    var addr = sin.pointee.sin_addr
                    _ = inet_ntop(AF_INET, &addr, &buffer, socklen_t(buffer.count))
                }
            }
        case AF_INET6:
            withUnsafePointer(to: &copy) { ptr in
                ptr.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { sin in
                    var addr = sin.pointee.sin6_addr
                    _ = inet_ntop(AF_INET6, &addr, &buffer, socklen_t(buffer.count))
                }
            }
        default:
            return "unknown"
        }
        let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func port(of storage: sockaddr_storage) -> Int? {
        var copy = storage
        switch Int32(storage.ss_family) {
        case AF_INET:
            return withUnsafePointer(to: &copy) { ptr in
                ptr.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
            }
        case AF_INET6:
            return withUnsafePointer(to: &copy) { ptr in
                ptr.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin6_port)) }
            }
        default:
            return nil
        }
    }

    private static func ipv4Address(_ host: String, port: Int) -> sockaddr_in? {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(truncatingIfNeeded: port).bigEndian
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { return nil }
        return address
    }

    private static func ipv6Address(_ host: String, port: Int) -> sockaddr_in6? {
        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        address.sin6_port = UInt16(truncatingIfNeeded: port).bigEndian
        guard inet_pton(AF_INET6, host, &address.sin6_addr) == 1 else { return nil }
        return address
    }
}

/// Why a listener could not be opened.
public enum ListenError: Error, CustomStringConvertible, Sendable {
    /// `HERALD_HOST` is not a numeric IPv4 or IPv6 address.
    case invalidAddress(String)
    /// A system call failed (port in use, permission denied…).
    case system(IOError)

    public var description: String {
        switch self {
        case .invalidAddress(let host): return "listen: '\(host)' is not a numeric IPv4 or IPv6 address"
        case .system(let error): return "listen: \(error)"
        }
    }
}

extension Socket {
    /// `send` result meaning the socket buffer is full.
    static let wouldBlock = -2

    /// Non-blocking `send` with `MSG_NOSIGNAL` (a closed peer is an error, never SIGPIPE).
    ///
    /// - Returns: bytes sent (≥ 0), `wouldBlock`, or -1 for a dead connection.
    @inline(__always)
    static func send(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int {
        if bytes.isEmpty { return 0 }
        while true {
            let n = Glibc.send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
            if n >= 0 { return n }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return wouldBlock
            default: return -1
            }
        }
    }
}
