extension StringProtocol {
    /// Whether the text is one or more ASCII digits (`0`-`9`) and nothing else. Swift's integer
    /// parsing also reads a sign (`+5`, `-0`), a spelling no setting, query parameter, cursor or
    /// unix time of Herald's is written in: the callers check this before they parse.
    public var isASCIIDigits: Bool {
        !isEmpty && utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }
}
