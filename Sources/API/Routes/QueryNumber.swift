import Realtime

extension HTTPRequest {
    /// The query parameter `name` read as a whole number within `range` (a page's `limit`, a
    /// `cursor`, the demo's `since`), or nil when the query does not name it.
    ///
    /// ASCII digits only: Swift's integer parsing also reads `+5` and `-0`, spellings the
    /// OpenAPI's `integer` parameters never mean; the settings read numbers the same way
    /// (leading zeros are read, `05` is 5).
    /// - Throws: 400 `invalid_request` naming `name`, with `message`, for an empty value, any
    ///   character other than `0`-`9`, a number past `N` or outside `range`; a repeated
    ///   parameter as `queryValue(_:)` refuses it.
    func queryNumber<N: FixedWidthInteger>(_ name: String, in range: ClosedRange<N>, otherwise message: String) throws(HTTPError) -> N? {
        guard let raw = try queryValue(name) else { return nil }
        guard raw.isASCIIDigits, let value = N(raw), range.contains(value) else {
            throw HTTPError.invalid(name, message)
        }
        return value
    }
}
