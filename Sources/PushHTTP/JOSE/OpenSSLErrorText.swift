import COpenSSL

/// OpenSSL's error queue, drained into one line for an error message.
///
/// Draining matters as much as reading: entries left on this thread's queue would be reported
/// by the next, unrelated OpenSSL call (e.g. a TLS handshake in the transport).
enum OpenSSLErrorText {
    /// The reasons on this thread's OpenSSL error queue, oldest first, joined with "; ";
    /// `fallback` when the queue is empty. The queue is empty afterwards.
    static func drain(fallback: String) -> String {
        var reasons: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            reasons.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return reasons.isEmpty ? fallback : reasons.joined(separator: "; ")
    }

    /// Empties this thread's error queue without reading it.
    static func clear() { ERR_clear_error() }
}
