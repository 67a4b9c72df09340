/// Why a kind catalog, a text template or a notification's texts were refused (NO-4, NO-5, NO-7).
///
/// `field` names where the problem is, as a path into the catalog JSON (`kinds["orders.paid"].title.pt`)
/// or into a call (`title.en`, `collapse`), so an operator or an API client can find it at once.
public enum CatalogError: Error, Equatable, Sendable {
    /// The catalog file could not be read (missing, unreadable, too large). `reason` is the system's.
    case unreadable(path: String, reason: String)
    /// A value is not acceptable: bad JSON, an unknown field, an unknown category, a malformed
    /// template, a priority outside normal|high|urgent, a bad kind name or locale tag.
    case invalid(field: String, reason: String)
    /// A template needs the argument `name`, and neither the call's `args` nor its `data` has it.
    case missingArgument(field: String, name: String)

    /// Where the problem is; nil for an unreadable file.
    public var field: String? {
        switch self {
        case .unreadable: nil
        case .invalid(let field, _), .missingArgument(let field, _): field
        }
    }

    /// One line for logs and for the `message` of a 400 answer.
    public var message: String {
        switch self {
        case .unreadable(let path, let reason):
            "cannot read the notification catalog \(path): \(reason)"
        case .invalid(let field, let reason):
            field.isEmpty ? reason : "\(field): \(reason)"
        case .missingArgument(let field, let name):
            field.isEmpty ? "the argument \"\(name)\" is missing" : "\(field) needs the argument \"\(name)\", which is neither in args nor in data"
        }
    }
}

extension CatalogError: CustomStringConvertible {
    /// Same as `message`, so string interpolation in log lines reads naturally.
    public var description: String { message }
}
