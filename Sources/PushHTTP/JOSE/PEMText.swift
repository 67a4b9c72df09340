/// Repairs the ways a PEM private key arrives through environment variables and JSON before
/// OpenSSL sees it.
///
/// Operators put the `.p8` on one line with literal `\n` escapes (seed 000 says so), sometimes
/// keep the quotes of an env file, or lose line breaks altogether; OpenSSL's PEM reader wants the
/// RFC 7468 layout. So we cut out the first `-----BEGIN … PRIVATE KEY-----` block, drop every
/// whitespace and escape from its base64 body and re-wrap it at 64 columns.
enum PEMText {
    /// What `normalize` found.
    enum Failure: Error, Equatable {
        /// No `-----BEGIN … PRIVATE KEY-----` … `-----END …-----` block.
        case noPrivateKeyBlock
        /// A passphrase-protected key (`ENCRYPTED PRIVATE KEY` or a `Proc-Type: 4,ENCRYPTED`
        /// header): the server has no passphrase to give, and OpenSSL's default would prompt on a TTY.
        case encrypted
    }

    /// The first private-key PEM block of `text` in canonical layout, ending with a newline.
    static func normalize(_ text: String) throws(Failure) -> String {
        var cleaned = text.replacingEscapedNewlines()
        cleaned = cleaned.trimmingWhitespace()
        if cleaned.count >= 2, let first = cleaned.first, first == "\"" || first == "'", cleaned.last == first {
            cleaned = String(cleaned.dropFirst().dropLast())
        }
        var searchFrom = cleaned.startIndex
        while let begin = cleaned[searchFrom...].firstRange(of: "-----BEGIN ") {
            guard let labelEnd = cleaned[begin.upperBound...].firstRange(of: "-----") else { break }
            let label = String(cleaned[begin.upperBound..<labelEnd.lowerBound])
            let footer = "-----END \(label)-----"
            guard let end = cleaned[labelEnd.upperBound...].firstRange(of: footer) else { break }
            searchFrom = end.upperBound
            guard label.hasSuffix("PRIVATE KEY") else { continue }  // e.g. "EC PARAMETERS" before the key
            if label == "ENCRYPTED PRIVATE KEY" { throw .encrypted }
            let body = cleaned[labelEnd.upperBound..<end.lowerBound]
            if body.contains(":") { throw .encrypted }  // RFC 1421 headers only appear on encrypted keys
            let base64 = body.filter { !$0.isWhitespace }
            var out = "-----BEGIN \(label)-----\n"
            var line = Substring(base64)
            while !line.isEmpty {
                out += line.prefix(64) + "\n"
                line = line.dropFirst(64)
            }
            return out + footer + "\n"
        }
        throw .noPrivateKeyBlock
    }
}
