#if canImport(Glibc)
import Glibc
#endif

/// Small helpers shared by `APNsCredentials` and `FCMCredentials` (other targets, hence `package`)
/// for reading seed-000 variables.
package enum EnvironmentReading {
    /// The variable's value with surrounding whitespace removed, or `nil` when unset or blank —
    /// env-file templates often carry `APNS_KEY_ID=` lines that mean "not configured".
    package static func value(_ name: String, in environment: [String: String]) -> String? {
        guard let raw = environment[name] else { return nil }
        let trimmed = raw.trimmingWhitespace()
        return trimmed.isEmpty ? nil : trimmed
    }

    /// Reads a whole (small) file as UTF-8 text.
    ///
    /// - Throws: `PushCredentialError.unreadableFile` naming `variable` and the system's reason.
    package static func readFile(_ path: String, variable: String) throws(PushCredentialError) -> String {
        guard let file = fopen(path, "rb") else {
            throw .unreadableFile(variable: variable, path: path, reason: String(cString: strerror(errno)))
        }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = fread(&chunk, 1, chunk.count, file)
            if count > 0 { bytes += chunk.prefix(count) }
            if count < chunk.count {
                if ferror(file) != 0 {
                    throw .unreadableFile(variable: variable, path: path, reason: String(cString: strerror(errno)))
                }
                break
            }
            // A key or service account is a few KB; anything this big is the wrong file.
            if bytes.count > 1 << 20 { throw .unreadableFile(variable: variable, path: path, reason: "larger than 1 MiB") }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
