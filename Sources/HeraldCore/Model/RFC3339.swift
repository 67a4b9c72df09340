/// RFC 3339 date-times read strictly (§5.6): `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`, upper-case
/// `T` and `Z`, every field within its range and the date one that exists (February 29th in leap
/// years only). Foundation's `ISO8601DateFormatter` rolls an impossible date or offset over into
/// another instant (`2026-02-30` is March 2nd, `+25:00` a day's shift), so a typo became an
/// instant nobody asked for instead of a refusal.
public enum RFC3339 {
    /// Unix milliseconds of `text` (a fraction past milliseconds rounded down), or nil when it is
    /// not an RFC 3339 date-time. A leap second (`:60`) is refused.
    public static func milliseconds(_ text: String) -> Int64? {
        let b = Array(text.utf8)
        func digits(_ at: Int, _ count: Int) -> Int? {
            guard at + count <= b.count else { return nil }
            var value = 0
            for i in at..<(at + count) {
                guard (0x30...0x39).contains(b[i]) else { return nil }
                value = value * 10 + Int(b[i] - 0x30)
            }
            return value
        }
        guard b.count >= 20, let year = digits(0, 4), b[4] == 0x2D, let month = digits(5, 2), b[7] == 0x2D,
              let day = digits(8, 2), b[10] == 0x54, let hour = digits(11, 2), b[13] == 0x3A,
              let minute = digits(14, 2), b[16] == 0x3A, let second = digits(17, 2) else { return nil }
        guard (1...12).contains(month), hour < 24, minute < 60, second < 60 else { return nil }
        let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
        let monthDays = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        guard (1...monthDays[month - 1]).contains(day) else { return nil }
        var at = 19
        var millis = 0
        if b[at] == 0x2E {
            at += 1
            let start = at
            while at < b.count, (0x30...0x39).contains(b[at]) {
                if at - start < 3 { millis = millis * 10 + Int(b[at] - 0x30) }
                at += 1
            }
            guard at > start else { return nil }
            for _ in min(at - start, 3)..<3 { millis *= 10 }
        }
        guard at < b.count else { return nil }
        var offsetMinutes = 0
        if b[at] == 0x5A {
            at += 1
        } else if b[at] == 0x2B || b[at] == 0x2D {
            guard let offsetHour = digits(at + 1, 2), at + 3 < b.count, b[at + 3] == 0x3A, let offsetMinute = digits(at + 4, 2),
                  offsetHour < 24, offsetMinute < 60 else { return nil }
            offsetMinutes = (offsetHour * 60 + offsetMinute) * (b[at] == 0x2B ? 1 : -1)
            at += 6
        } else {
            return nil
        }
        guard at == b.count else { return nil }
        let days = Int64(CivilDate.daysSinceEpoch(year: year, month: month, day: day))
        let seconds = days * 86_400 + Int64(hour * 3600 + minute * 60 + second) - Int64(offsetMinutes * 60)
        return seconds * 1000 + Int64(millis)
    }
}
