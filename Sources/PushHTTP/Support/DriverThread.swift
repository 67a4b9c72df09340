import CLinux
#if canImport(Glibc)
import Glibc
#endif

/// Starts a push client's driver loop on a pthread of its own (both HTTP/2 clients own one):
/// `body` runs there once and the thread ends when it returns. Returns the thread to join, or nil
/// when it could not be created (`body` is then released unrun). `name` (at most 15 bytes) shows
/// in `ps -L` and `/proc/<pid>/task/*/comm`; nil keeps the process's name.
///
/// Nonisolated (not top-level code), so the C entry closure is not inferred `@MainActor`, which
/// traps at runtime on the new thread.
nonisolated func startDriverThread(named name: String?, _ body: @escaping @Sendable () -> Void) -> pthread_t? {
    final class Start: Sendable {
        let name: String?
        let body: @Sendable () -> Void
        init(name: String?, body: @escaping @Sendable () -> Void) { self.name = name; self.body = body }
    }
    var tid = pthread_t()
    let arg = Unmanaged.passRetained(Start(name: name, body: body)).toOpaque()
    let rc = pthread_create(&tid, nil, { raw in
        guard let raw else { return nil }
        let start = Unmanaged<Start>.fromOpaque(raw).takeRetainedValue()
        if let name = start.name { _ = CLinux_setThreadName(name) }
        start.body()
        return nil
    }, arg)
    if rc != 0 {
        Unmanaged<Start>.fromOpaque(arg).release()
        return nil
    }
    return tid
}
