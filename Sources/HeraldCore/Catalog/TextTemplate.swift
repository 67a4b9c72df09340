/// A text with `{placeholders}`, parsed once and rendered per notification (NO-5, NO-7):
/// `Pedido #{order_number} pago`, `conv-{conversation_id}`.
///
/// A placeholder name is 1–64 of `A-Z a-z 0-9 _ . -`. `{{` and `}}` stand for literal braces; any
/// other brace is an error, so a typo such as `{order_id` is caught when the catalog loads rather
/// than showing up on a phone.
public struct TextTemplate: Sendable, Equatable {
    /// The text as written.
    public let source: String
    private let segments: [Segment]

    private enum Segment: Sendable, Equatable {
        case text(String)
        case placeholder(String)
    }

    /// - Parameters:
    ///   - source: the template text.
    ///   - field: where the text sits, named in errors.
    /// - Throws: `CatalogError.invalid` for an unclosed `{`, a lone `}`, or an empty or malformed name.
    public init(_ source: String, field: String = "") throws(CatalogError) {
        // Most texts (every per-call title and body of the choke point) have no brace: one
        // literal, without the scalar-by-scalar copy below (~6,000 instructions a text, issue 17).
        var bytes = source
        if !bytes.withUTF8({ $0.contains { $0 == UInt8(ascii: "{") || $0 == UInt8(ascii: "}") } }) {
            self.source = source
            segments = source.isEmpty ? [] : [.text(source)]
            return
        }
        var segments: [Segment] = []
        var literal = String.UnicodeScalarView()
        // Scalars, not Characters: a brace followed by a combining mark is one Character, and
        // must still be read as a brace.
        var chars = source.unicodeScalars.makeIterator()
        var pending = chars.next()
        while let char = pending {
            pending = chars.next()
            switch char {
            case "{" where pending == "{":
                literal.append("{")
                pending = chars.next()
            case "}" where pending == "}":
                literal.append("}")
                pending = chars.next()
            case "}":
                throw .invalid(field: field, reason: "a lone } in \"\(source)\" (write }} for a literal brace)")
            case "{":
                var name = ""
                var closed = false
                while let inner = pending {
                    pending = chars.next()
                    if inner == "}" { closed = true; break }
                    name.unicodeScalars.append(inner)
                }
                guard closed else {
                    throw .invalid(field: field, reason: "an unclosed { in \"\(source)\" (write {{ for a literal brace)")
                }
                guard Self.isPlaceholderName(name) else {
                    throw .invalid(field: field, reason: name.isEmpty
                        ? "an empty placeholder {} in \"\(source)\""
                        : "the placeholder {\(name)} in \"\(source)\" is not a name of 1-64 letters, digits, _ . -")
                }
                if !literal.isEmpty { segments.append(.text(String(literal))); literal = String.UnicodeScalarView() }
                segments.append(.placeholder(name))
            default:
                literal.append(char)
            }
        }
        if !literal.isEmpty { segments.append(.text(String(literal))) }
        self.source = source
        self.segments = segments
    }

    /// The placeholder names, each once, in order of first appearance.
    public var placeholders: [String] {
        var seen: Set<String> = []
        var out: [String] = []
        for case .placeholder(let name) in segments where seen.insert(name).inserted {
            out.append(name)
        }
        return out
    }

    /// Whether the text has a placeholder: one without renders the same whatever the arguments.
    public var hasPlaceholders: Bool {
        segments.contains { if case .placeholder = $0 { true } else { false } }
    }

    /// Checks what `render` would, without writing the text.
    /// - Throws: `CatalogError.missingArgument` for the first placeholder without an argument.
    public func check(_ arguments: [String: String], field: String) throws(CatalogError) {
        for case .placeholder(let name) in segments where arguments[name] == nil {
            throw .missingArgument(field: field, name: name)
        }
    }

    /// The text with every placeholder replaced by its argument.
    ///
    /// - Parameters:
    ///   - arguments: placeholder name → value. Values are inserted as they are.
    ///   - field: where the template sits, named in errors.
    /// - Throws: `CatalogError.missingArgument` for the first placeholder without an argument.
    public func render(_ arguments: [String: String], field: String) throws(CatalogError) -> String {
        var out = ""
        for segment in segments {
            switch segment {
            case .text(let text): out += text
            case .placeholder(let name):
                guard let value = arguments[name] else { throw .missingArgument(field: field, name: name) }
                out += value
            }
        }
        return out
    }

    private static func isPlaceholderName(_ name: String) -> Bool {
        (1...64).contains(name.utf8.count) && name.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "-"):
                true
            default:
                false
            }
        }
    }
}
