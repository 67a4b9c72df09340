/// Calendar arithmetic on proleptic Gregorian dates, for the readers of RFC 3339 times
/// (`RFC3339`) and HTTP-dates (`Retry-After`, RFC 9110 §5.6.7) without Foundation's calendars.
public enum CivilDate {
    /// Days since 1970-01-01 of `year`-`month`-`day` (month 1-12, day 1-31, not checked against
    /// the month's length; H. Hinnant's `days_from_civil`). Negative before 1970.
    public static func daysSinceEpoch(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
