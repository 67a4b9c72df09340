import Glibc
import HeraldCore

/// A failed system call: the function that failed and the `errno` it left.
public struct IOError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The C function that failed, e.g. `"accept4"`.
    public let function: String
    /// The `errno` value after the failure.
    public let errnoCode: Int32

    public init(_ function: String, errno errnoCode: Int32) {
        self.function = function
        self.errnoCode = errnoCode
    }

    public var description: String {
        "\(function) failed: \(String(cString: strerror(errnoCode))) (errno \(errnoCode))"
    }
}

/// The outcome of a non-blocking system call: a value, or "try again when the fd is ready".
public enum IOResult<Value> {
    case processed(Value)
    case wouldBlock
}

/// Runs a system call that returns -1 on failure, retrying `EINTR`.
///
/// - Returns: `.wouldBlock` for `EAGAIN`/`EWOULDBLOCK` when `blocking` is false, else the result.
/// - Throws: `IOError` with the function name and errno for every other failure.
/// - Important: `EBADF` and `EFAULT` mean Herald itself misused a descriptor or pointer; they trap
///   rather than throw, because continuing would act on someone else's descriptor.
@inline(__always)
func syscall<T: FixedWidthInteger>(
    _ function: StaticString, blocking: Bool = false, _ body: () -> T
) throws(IOError) -> IOResult<T> {
    while true {
        let result = body()
        if result != -1 { return .processed(result) }
        let err = errno
        switch err {
        case EINTR:
            continue
        case EAGAIN where !blocking, EWOULDBLOCK where !blocking:
            return .wouldBlock
        case EBADF, EFAULT:
            preconditionFailure("\(function) failed with errno \(err): descriptor or pointer misuse")
        default:
            throw IOError("\(function)", errno: err)
        }
    }
}

// The free functions below are the loops' hot-path spelling of `SystemClock` (HeraldCore), the
// one place Herald reads the OS clocks; both inline to a bare `clock_gettime`.

/// Monotonic time in nanoseconds (`CLOCK_MONOTONIC`), the clock of every timeout in Herald.
@inline(__always)
public func monotonicNanoseconds() -> UInt64 { SystemClock().monotonicNanoseconds }

/// Wall-clock time in milliseconds since 1970 (times shown to API callers).
@inline(__always)
public func unixMilliseconds() -> Int64 { SystemClock().unixMilliseconds }

/// Wall-clock time in whole seconds since 1970 (token expiry, `exp`/`nbf` checks).
@inline(__always)
public func unixSeconds() -> Int64 { SystemClock().unixSeconds }
