import HeraldCore
import Realtime

/// Any JSON value (RFC 8259), decoded strictly (a boolean is never a number) and written back
/// compactly on one line, so it can sit on an SSE `data:` line as-is (RT-8a).
public enum JSONValue: Sendable, Equatable, Decodable {
    case null
    case bool(Bool)
    case integer(Int64)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([(String, JSONValue)])

    public init(from decoder: Decoder) throws {
        if var array = try? decoder.unkeyedContainer() {
            var values: [JSONValue] = []
            while !array.isAtEnd { values.append(try array.decode(JSONValue.self)) }
            self = .array(values)
            return
        }
        if let object = try? decoder.container(keyedBy: AnyKey.self) {
            var pairs: [(String, JSONValue)] = []
            for key in object.allKeys.sorted(by: { $0.stringValue < $1.stringValue }) {
                pairs.append((key.stringValue, try object.decode(JSONValue.self, forKey: key)))
            }
            self = .object(pairs)
            return
        }
        let single = try decoder.singleValueContainer()
        if single.decodeNil() {
            self = .null
        } else if let value = try? single.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? single.decode(Int64.self) {
            self = .integer(value)
        } else if let value = try? single.decode(Double.self) {
            self = .number(value)
        } else {
            self = .string(try single.decode(String.self))
        }
    }

    /// Compact JSON text: no insignificant whitespace, object keys sorted, never a raw CR/LF.
    public var compactText: String {
        var out = ""
        write(to: &out)
        return out
    }

    private func write(to out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let value): out += value ? "true" : "false"
        case .integer(let value): out += String(value)
        case .number(let value):
            if value.isFinite, value == value.rounded(), abs(value) < 1e15 {
                out += String(Int64(value))
            } else {
                out += value.isFinite ? "\(value)" : "null"
            }
        case .string(let value): out += JSONText.quote(value)
        case .array(let values):
            out += "["
            for (i, value) in values.enumerated() {
                if i > 0 { out += "," }
                value.write(to: &out)
            }
            out += "]"
        case .object(let pairs):
            out += "{"
            for (i, (key, value)) in pairs.enumerated() {
                if i > 0 { out += "," }
                out += JSONText.quote(key)
                out += ":"
                value.write(to: &out)
            }
            out += "}"
        }
    }

    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        lhs.compactText == rhs.compactText
    }
}

/// A coding key for objects whose keys are not known in advance.
struct AnyKey: CodingKey {
    let stringValue: String
    let intValue: Int?
    init(stringValue: String) { self.stringValue = stringValue; intValue = nil }
    init(intValue: Int) { stringValue = String(intValue); self.intValue = intValue }
}
