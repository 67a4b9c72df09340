import Foundation
import Realtime

/// Decodes JSON request bodies into typed values, turning every decoding failure into a 400
/// `invalid_request` that names the offending field (`messages[2].channel`).
enum RequestBody {
    /// The body's members are `T.members`: one it does not name, at the top or in an object whose
    /// members are fixed, is a 400 naming it (`push.policyy`), and nothing changes.
    /// - Throws: as `decode(lenient:from:)`, then `HTTPError` 400 on the first unknown member
    ///   (keys sorted within each object, outer objects first).
    /// - Throws: also `HTTPError` 400 naming a `.wholeNumber` member whose value has a fractional
    ///   part (`1000.5`) or is beyond 64 bits: Foundation's decoder refuses `1.5` without naming
    ///   the field. One whose value is whole however written (`1000.0`, `1e3`) is taken, as JSON
    ///   Schema's `integer` takes it (ADR 0029), and decoded from its plain digits.
    static func decode<T: JSONBody>(_ type: T.Type, from request: HTTPRequest) throws(HTTPError) -> T {
        try check(request)
        var body = request.body
        if T.members.hasWholeNumbers {
            var i = JSONScanner.skipSpace(body, 0)
            var respelt: [(Range<Int>, Int64)] = []
            if let failure = wholeNumbers(body, &i, T.members, at: "", &respelt) { throw failure }
            // Foundation's decoder reads most such spellings, but not all (`9223372036854775807.0`
            // is "not valid JSON" to it): it gets the digits instead.
            for (range, value) in respelt.reversed() { body.replaceSubrange(range, with: Array(String(value).utf8)) }
        }
        let value = try decodeChecked(type, from: body)
        if let object = try? JSONSerialization.jsonObject(with: Data(request.body)) {
            try refuseUnknownMembers(object, T.members, at: "")
        }
        return value
    }

    /// The 400 for `key`, not one of `members`' keys, in the object at `path` ("" for the body).
    static func unknownMember(_ key: String, at path: String, in members: BodyMembers) -> HTTPError {
        let field = path.isEmpty ? key : "\(path).\(key)"
        let owner = path.isEmpty ? "the body's members are" : "\(path)'s members are"
        return HTTPError.invalid(field, "unknown member \"\(field.prefix(200))\": \(owner) \(members.names.joined(separator: ", "))")
    }

    private static func refuseUnknownMembers(_ value: Any, _ members: BodyMembers, at path: String) throws(HTTPError) {
        switch members {
        case .any, .wholeNumber:
            return
        case .array(let element):
            guard let array = value as? [Any] else { return }
            for (index, item) in array.enumerated() { try refuseUnknownMembers(item, element, at: "\(path)[\(index)]") }
        case .object(let fields):
            guard let object = value as? [String: Any] else { return }
            for key in object.keys.sorted() {
                guard let inner = fields.first(where: { $0.0 == key })?.1 else { throw unknownMember(key, at: path, in: members) }
                try refuseUnknownMembers(object[key]!, inner, at: path.isEmpty ? key : "\(path).\(key)")
            }
        }
    }

    /// Decodes any `Decodable`, ignoring members it does not know: for bodies a client's platform
    /// writes (a seed's compatibility route, a browser's `PushSubscription`), or checked by hand.
    /// - Throws: `HTTPError` 415 for a non-JSON content type, 400 for malformed JSON or a field of
    ///   the wrong type or missing.
    static func decode<T: Decodable>(lenient type: T.Type, from request: HTTPRequest) throws(HTTPError) -> T {
        try check(request)
        return try decodeChecked(type, from: request.body)
    }

    /// The first member `members` marks `.wholeNumber` whose value, at `i` in `b` (a body `check`
    /// passed), is a number that is not a whole number within 64 bits, as a 400 naming it; nil
    /// when there is none. `i` moves past the value. A whole number written other than as plain
    /// digits (`1e3`) is added to `respelt` with its bytes' range and value, in body order. A
    /// value of another type is the decoder's to judge.
    private static func wholeNumbers(_ b: [UInt8], _ i: inout Int, _ members: BodyMembers, at path: String,
                                     _ respelt: inout [(Range<Int>, Int64)]) -> HTTPError? {
        var failure: HTTPError?
        switch members {
        case .wholeNumber:
            guard i < b.count, b[i] == UInt8(ascii: "-") || (b[i] >= UInt8(ascii: "0") && b[i] <= UInt8(ascii: "9")) else { break }
            let start = i
            if JSONScanner.integer(b, &i) != nil { return nil }
            guard let value = JSONScanner.wholeNumber(b, &i) else { return wholeNumberRefusal(path, "\(path) must be a whole number") }
            respelt.append((start..<i, value))
            return nil
        case .object(let fields) where i < b.count && b[i] == UInt8(ascii: "{"):
            _ = JSONScanner.object(b, &i) { key, i in
                let inner = fields.first(where: { $0.0 == key })?.1 ?? .any
                failure = wholeNumbers(b, &i, inner, at: path.isEmpty ? key : "\(path).\(key)", &respelt)
                return failure == nil
            }
            return failure
        case .array(let element) where i < b.count && b[i] == UInt8(ascii: "["):
            var index = 0
            _ = JSONScanner.array(b, &i) { i in
                failure = wholeNumbers(b, &i, element, at: "\(path)[\(index)]", &respelt)
                index += 1
                return failure == nil
            }
            return failure
        default:
            break
        }
        _ = JSONScanner.skipValue(b, &i)
        return nil
    }

    /// The 400 naming `field`, a whole-number member whose value is not one within 64 bits;
    /// `what` says what it must be ("ttl_seconds must be a whole number of seconds"). One text
    /// for the generic decoder and the notifications' scanner.
    static func wholeNumberRefusal(_ field: String, _ what: String) -> HTTPError {
        HTTPError.invalid(field, "\(what): a number within 64 bits without a fractional part (1000, 1000.0 and 1e3 are one value; 1000.5 is refused)")
    }

    /// Decodes a body `check` passed.
    private static func decodeChecked<T: Decodable>(_ type: T.Type, from body: [UInt8]) throws(HTTPError) -> T {
        do {
            return try JSONDecoder().decode(T.self, from: Data(body))
        } catch let error as HTTPError {
            throw error
        } catch let error as DecodingError {
            throw describe(error)
        } catch {
            throw HTTPError(400, "invalid_request", "the body is not valid JSON")
        }
    }

    /// Decodes a body whose top-level members are exactly `Members`' cases: one it does not know is
    /// a 400 naming it, for bodies where an ignored member would change the meaning (a misspelt
    /// filter read as "no filter").
    /// - Throws: as `decode(lenient:from:)`, and `HTTPError` 400 on the first unknown member (sorted).
    static func decode<T: Decodable, Members: CodingKey & CaseIterable>(_ type: T.Type, from request: HTTPRequest,
                                                                        members: Members.Type) throws(HTTPError) -> T {
        let value = try decode(lenient: type, from: request)
        let known = members.allCases.map(\.stringValue)
        if let object = (try? JSONSerialization.jsonObject(with: Data(request.body))) as? [String: Any],
           let unknown = object.keys.sorted().first(where: { !known.contains($0) }) {
            throw HTTPError.invalid(unknown, "unknown member \"\(unknown)\": the body's members are \(known.joined(separator: ", "))")
        }
        return value
    }

    /// The checks every JSON body passes before it is read: a JSON content type (or none), a
    /// non-empty body, strict RFC 8259 syntax (valid UTF-8, no lone surrogate escapes, numbers
    /// within a double's range) and bounded nesting.
    /// - Throws: `HTTPError` 415 or 400.
    /// - Parameter rejectDuplicateKeys: refuse objects naming a key twice, at any depth (keys
    ///   compared decoded and canonically, so `"a"` and `"\u0061"` are one key, `"\u00e9"` and
    ///   `"e\u0301"` too).
    /// - Parameter rejectNumbersBeyondDouble: refuse a number beyond a double's range (`1e400`);
    ///   `POST /v1/notifications` leaves it to its scanner, which names the whole-number field.
    static func check(_ request: HTTPRequest, rejectDuplicateKeys: Bool = true, rejectNumbersBeyondDouble: Bool = true) throws(HTTPError) {
        try checkContentType(request)
        guard !request.body.isEmpty else {
            throw HTTPError(400, "invalid_request", "the request needs a JSON body")
        }
        if let failure = JSONSyntax.check(request.body, maxDepth: maxNestingDepth, rejectDuplicateKeys: rejectDuplicateKeys,
                                          rejectNumbersBeyondDouble: rejectNumbersBeyondDouble) {
            throw refusal(failure, of: "the body")
        }
    }

    /// `JSONSyntax`'s failure as the 400 that names it; `what` is the refused text's name ("the body").
    static func refusal(_ failure: JSONSyntax.Failure, of what: String) -> HTTPError {
        switch failure {
        case .tooDeep:
            return HTTPError(400, "invalid_request", "\(what) nests arrays and objects deeper than \(maxNestingDepth) levels")
        case .invalid(let offset):
            return HTTPError(400, "invalid_request", "\(what) is not valid JSON (at byte \(offset))")
        case .duplicateKey(let offset, let key):
            return HTTPError(400, "invalid_request", "the key \"\(key.prefix(64))\" appears twice in one object (at byte \(offset))")
        case .numberOutOfRange(let offset):
            return HTTPError(400, "invalid_request", "a number in \(what) is beyond the range of a double, ±1.8e308 (at byte \(offset))")
        }
    }

    /// The WebSocket protocol's messages pass the checks request bodies do (strict RFC 8259, bounded
    /// nesting, no member named twice), so a client cannot say one thing to a parser that keeps the
    /// first copy of a member and another to one that keeps the last.
    static let webSocketMessageCheck: WebSocketMessageCheck = { bytes in
        JSONSyntax.check(bytes, maxDepth: maxNestingDepth, rejectDuplicateKeys: true).map { refusal($0, of: "the message") }
    }

    /// The first of `check`'s checks: a missing Content-Type is read as JSON (curl -d users); a
    /// declared one must be JSON (`application/json`, or `application/…+json`).
    /// - Throws: `HTTPError` 415.
    static func checkContentType(_ request: HTTPRequest) throws(HTTPError) {
        // The usual exact spelling skips the parse: splitting and trimming with Foundation cost
        // ~20k instructions per call (issue 17, the choke point's profile).
        let (given, count) = request.headers.first("Content-Type")
        // Two fields could each be read by a different hop: the body's type would be ambiguous.
        if count > 1 { throw HTTPError(400, "invalid_request", "Content-Type is given twice: send it once", field: "Content-Type") }
        if let contentType = given, contentType != "application/json" {
            let parts = contentType.split(separator: ";")
            let mediaType = parts.first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
            guard mediaType == "application/json" || (mediaType.hasPrefix("application/") && mediaType.hasSuffix("+json")) else {
                throw HTTPError(415, "unsupported_media_type", "the body must be application/json")
            }
            // JSON between systems is UTF-8 (RFC 8259 §8.1); a body declared in another charset
            // would be read as UTF-8 anyway, and its text taken wrongly.
            for parameter in parts.dropFirst() {
                let pair = parameter.split(separator: "=", maxSplits: 1)
                guard pair.count == 2, pair[0].trimmingCharacters(in: .whitespaces).lowercased() == "charset" else { continue }
                let charset = pair[1].trimmingCharacters(in: CharacterSet.whitespaces.union(CharacterSet(charactersIn: "\""))).lowercased()
                guard charset == "utf-8" || charset == "utf8" else {
                    throw HTTPError(415, "unsupported_media_type", "a JSON body is UTF-8 (RFC 8259 §8.1), not charset=\(charset.prefix(40))")
                }
            }
        }
    }

    /// Deepest array/object nesting accepted. Decoding recurses once per level, so this bounds
    /// the stack a hostile body can make a loop thread use.
    static let maxNestingDepth = 64

    private static func describe(_ error: DecodingError) -> HTTPError {
        switch error {
        case .keyNotFound(let key, let context):
            let field = path(context.codingPath + [key])
            return HTTPError(400, "invalid_request", "\(field) is required", field: field)
        case .typeMismatch(let type, let context):
            let field = path(context.codingPath)
            if field.isEmpty { return HTTPError(400, "invalid_request", "the body must be a JSON object") }
            return HTTPError(400, "invalid_request", "\(field) has the wrong type (expected \(typeName(type)))", field: field)
        case .valueNotFound(let type, let context):
            let field = path(context.codingPath)
            if field.isEmpty { return HTTPError(400, "invalid_request", "the body must be a JSON object") }
            return HTTPError(400, "invalid_request", "\(field) must not be null (expected \(typeName(type)))", field: field)
        case .dataCorrupted(let context):
            let field = path(context.codingPath)
            // The syntax was checked first, so Foundation's "not valid JSON" here means a number
            // that does not fit its field (a fraction where a whole number goes, or beyond 64 bits).
            if field.isEmpty {
                return HTTPError(400, "invalid_request", "a number in the body does not fit its field: expected a whole number, or a value within 64-bit range")
            }
            return HTTPError(400, "invalid_request", "\(field) is invalid", field: field)
        @unknown default:
            return HTTPError(400, "invalid_request", "the body is not valid")
        }
    }

    private static func path(_ keys: [CodingKey]) -> String {
        var out = ""
        for key in keys {
            if let index = key.intValue {
                out += "[\(index)]"
            } else {
                out += out.isEmpty ? key.stringValue : ".\(key.stringValue)"
            }
        }
        return out
    }

    private static func typeName(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: return "string"
        case is Bool.Type: return "boolean"
        case is Int.Type, is Int64.Type, is Double.Type: return "number"
        default:
            let name = "\(type)"
            if name.hasPrefix("Array") { return "array" }
            if name.hasPrefix("Dictionary") { return "object" }
            return name
        }
    }
}

extension HTTPError {
    /// 400 `invalid_request` naming `field`.
    static func invalid(_ field: String, _ message: String) -> HTTPError {
        HTTPError(400, "invalid_request", message, field: field)
    }
}

/// A JSON request body whose members are fixed: `RequestBody.decode` refuses any other.
protocol JSONBody: Decodable {
    /// The members the body may have, and inside each which are fixed.
    static var members: BodyMembers { get }
}

/// The members a JSON value may have, where they are fixed. Free-form values (`data`, a
/// per-locale text map) are `.any`; `null` or a value of another type is the decoder's to judge.
indirect enum BodyMembers: Sendable {
    /// Any value: its members, if any, are not checked.
    case any
    /// An object with exactly these members (in the order the 400 lists them).
    case object([(String, BodyMembers)])
    /// An array whose items are each checked.
    case array(BodyMembers)
    /// A number whose value must be a whole number within 64 bits, however written (`1000`,
    /// `1000.0`, `1e3`; not `1000.5`); `null` or another type is the decoder's to judge.
    case wholeNumber

    /// An object with these members, each free.
    static func fields(_ names: String...) -> BodyMembers {
        .object(names.map { ($0, .any) })
    }

    /// Whether a `.wholeNumber` is among them, at any depth.
    var hasWholeNumbers: Bool {
        switch self {
        case .any: false
        case .wholeNumber: true
        case .array(let element): element.hasWholeNumbers
        case .object(let fields): fields.contains { $0.1.hasWholeNumbers }
        }
    }

    /// The member names of an object; empty otherwise.
    var names: [String] {
        if case .object(let fields) = self { return fields.map(\.0) }
        return []
    }
}
