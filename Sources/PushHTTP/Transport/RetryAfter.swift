import HeraldCore

/// Reads a `Retry-After` header in both of its forms (RFC 9110 §10.2.3, SPEC PU-5b):
/// delay-seconds (`120`) or an HTTP-date (`Fri, 31 Dec 1999 23:59:59 GMT`, including the two
/// obsolete date formats recipients must accept, RFC 9110 §5.6.7).
public enum RetryAfter {
    /// Seconds to wait, or `nil` when the header is absent or unreadable.
    ///
    /// - Parameters:
    ///   - header: the header value.
    ///   - now: UNIX seconds, to turn a date into a delay. A date in the past gives 0.
    public static func seconds(from header: String?, now: Int) -> Int? {
        guard let text = header?.trimmingSpaces(), !text.isEmpty else { return nil }
        if text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) {
            // Beyond a day is surely a mistake or an attack; cap instead of parking jobs for years.
            return text.count > 9 ? 86_400 : min(Int(text)!, 86_400)
        }
        guard let date = httpDate(text) else { return nil }
        return min(max(0, date - now), 86_400)
    }

    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    /// UNIX seconds of an HTTP-date (IMF-fixdate, RFC 850 or asctime form), `nil` if malformed.
    static func httpDate(_ text: String) -> Int? {
        let parts = text.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        var day: Int?, month: Int?, year: Int?, clock: String?
        if let comma = parts.first, comma.hasSuffix(",") {
            if parts.count == 6, parts[5] == "GMT" {                       // Sun, 06 Nov 1994 08:49:37 GMT
                (day, month, year, clock) = (Int(parts[1]), monthIndex(parts[2]), Int(parts[3]), parts[4])
                if parts[3].count != 4 { return nil }
            } else if parts.count == 4, parts[3] == "GMT" {               // Sunday, 06-Nov-94 08:49:37 GMT
                let dmy = parts[1].split(separator: "-").map(String.init)
                guard dmy.count == 3, dmy[2].count == 2, let yy = Int(dmy[2]) else { return nil }
                (day, month, year, clock) = (Int(dmy[0]), monthIndex(dmy[1]), yy < 70 ? 2000 + yy : 1900 + yy, parts[2])
            } else {
                return nil
            }
        } else if parts.count == 5 {                                       // Sun Nov  6 08:49:37 1994
            (day, month, year, clock) = (Int(parts[2]), monthIndex(parts[1]), Int(parts[4]), parts[3])
        }
        guard let day, let month, let year, let clock, (1...31).contains(day) else { return nil }
        let hms = clock.split(separator: ":").map { Int($0) }
        guard hms.count == 3, let h = hms[0], let m = hms[1], let s = hms[2],
              (0...23).contains(h), (0...59).contains(m), (0...60).contains(s) else { return nil }
        return CivilDate.daysSinceEpoch(year: year, month: month, day: day) * 86_400 + h * 3600 + m * 60 + s
    }

    private static func monthIndex(_ name: String) -> Int? {
        months.firstIndex(of: name.lowercased()).map { $0 + 1 }
    }
}
