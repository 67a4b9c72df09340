import Foundation
import Realtime

/// Decodes JSON request bodies into typed values, turning every decoding failure into a 400
/// `invalid_request` that names the offending field (`messages[2].channel`).
enum RequestBody {
    /// - Throws: `HTTPError` 415 for a non-JSON content type, 400 for malformed JSON or a field of
    ///   the wrong type or missing.
    static func decode<T: Decodable>(_ type: T.Type, from request: HTTPRequest) throws(HTTPError) -> T {
        try check(request)
        do {
            return try JSONDecoder().decode(T.self, from: Data(request.body))
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
    /// - Throws: as `decode(_:from:)`, and `HTTPError` 400 on the first unknown member (sorted).
    static func decode<T: Decodable, Members: CodingKey & CaseIterable>(_ type: T.Type, from request: HTTPRequest,
                                                                        members: Members.Type) throws(HTTPError) -> T {
        let value = try decode(type, from: request)
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
        // A missing Content-Type is read as JSON (curl -d users); a declared one must be JSON.
        // The usual exact spelling skips the parse: splitting and trimming with Foundation cost
        // ~20k instructions per call (issue 17, the choke point's profile).
        if let contentType = request.headers["Content-Type"], contentType != "application/json" {
            let mediaType = contentType.split(separator: ";", maxSplits: 1).first.map {
                $0.trimmingCharacters(in: .whitespaces).lowercased()
            } ?? ""
            guard mediaType == "application/json" || (mediaType.hasPrefix("application/") && mediaType.hasSuffix("+json")) else {
                throw HTTPError(415, "unsupported_media_type", "the body must be application/json")
            }
        }
        guard !request.body.isEmpty else {
            throw HTTPError(400, "invalid_request", "the request needs a JSON body")
        }
        switch JSONSyntax.check(request.body, maxDepth: maxNestingDepth, rejectDuplicateKeys: rejectDuplicateKeys,
                                rejectNumbersBeyondDouble: rejectNumbersBeyondDouble) {
        case nil: break
        case .tooDeep?:
            throw HTTPError(400, "invalid_request", "the body nests arrays and objects deeper than \(maxNestingDepth) levels")
        case .invalid(let offset)?:
            throw HTTPError(400, "invalid_request", "the body is not valid JSON (at byte \(offset))")
        case .duplicateKey(let offset, let key)?:
            throw HTTPError(400, "invalid_request", "the key \"\(key.prefix(64))\" appears twice in one object (at byte \(offset))")
        case .numberOutOfRange(let offset)?:
            throw HTTPError(400, "invalid_request", "a number in the body is beyond the range of a double, ±1.8e308 (at byte \(offset))")
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
