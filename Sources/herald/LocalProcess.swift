import Foundation
import Glibc
import HeraldCore

/// This machine's view of processes, for the node id's liveness check (ADR 0016): a holder on
/// this machine whose process is gone may be replaced at once instead of after the window.
///
/// A process is keyed `boot/pidns/pid/start`: the kernel's boot id (a reboot changes it), the pid
/// namespace (a container numbers its own pids: pid 7 there is not pid 7 here), the pid, and the
/// process's start time in clock ticks since boot (a reused pid starts later). Only a holder with
/// this process's boot id and pid namespace is judged here; any other is `.unknown`. Host names
/// are not compared: two containers may share one.
struct LocalProcess: ProcessLivenessProbe {
    /// This process's key; empty when `/proc` cannot say (its holders then wait out the window).
    let key: String
    private let boot: String
    private let namespace: String

    init() {
        boot = (try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
        namespace = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/ns/pid")) ?? ""
        let pid = getpid()
        if !boot.isEmpty, !namespace.isEmpty, let own = Self.stat(pid: pid) {
            key = "\(boot)/\(namespace)/\(pid)/\(own.start)"
        } else {
            key = ""
        }
    }

    func liveness(of holder: NodeInstance) -> ProcessLiveness {
        let parts = holder.processKey.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard !key.isEmpty, parts.count == 4, parts[0] == boot, parts[1] == namespace, let pid = Int32(parts[2]), pid > 0 else {
            return .unknown
        }
        guard let seen = Self.stat(pid: pid) else {
            // No such process in this namespace; anything else (unreadable) proves nothing.
            return access("/proc/\(pid)", F_OK) != 0 && errno == ENOENT ? .dead : .unknown
        }
        // A zombie (killed, not reaped yet) holds nothing.
        if seen.state == "Z" || seen.state == "X" { return .dead }
        return seen.start == parts[3] ? .alive : .dead
    }

    /// The state and start time (`/proc/PID/stat` fields 3 and 22) of a process, nil when unreadable.
    static func stat(pid: Int32) -> (state: String, start: String)? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return nil }
        // After the command name (which may hold spaces and parentheses): field 3 onwards.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 19 else { return nil }
        return (String(fields[0]), String(fields[19]))
    }

    /// The machine's host name (`gethostname`, no DNS lookup), for messages.
    static var hostName: String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "unknown" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
