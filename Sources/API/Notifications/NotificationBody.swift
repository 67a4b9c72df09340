/// `POST /v1/notifications` as the app backend sends it (NO-1), before validation. Field names
/// are the wire names; `NotificationRequest.init(body:)` turns it into checked, typed values.
struct NotificationBody: JSONBody, Equatable {
    let recipients: RecipientsBody
    let kind: String
    let scope: String?
    let title: TextInput?
    let body: TextInput?
    let args: [String: String]?
    let data: DataInput?
    let collapse_key: String?
    let thread_id: String?
    let sound: String?
    let android_channel_id: String?
    let priority: String?
    let ttl_seconds: Int?
    let expires_at: Instant?
    let badge: Badge?
    let persist: Bool?
    let live: LiveBody?
    let push: PushBody?
    let audience: String?
    let track_opens: Bool?
    let idempotency_key: String?

    /// `title`, `body`, `args` and `data` are free maps (locales, template arguments, the app's
    /// data); `NotificationBodyScanner` refuses the same unknown members. The whole numbers are
    /// the scanner's to judge first; marked here, a body the decoder reads gets them as digits.
    static let members = BodyMembers.object([
        ("recipients", RecipientsBody.members), ("kind", .any), ("scope", .any), ("title", .any), ("body", .any),
        ("args", .any), ("data", .any), ("collapse_key", .any), ("thread_id", .any), ("sound", .any),
        ("android_channel_id", .any), ("priority", .any), ("ttl_seconds", .wholeNumber), ("expires_at", .wholeNumber), ("badge", .wholeNumber),
        ("persist", .any), ("live", LiveBody.members), ("push", PushBody.members), ("audience", .any),
        ("track_opens", .any), ("idempotency_key", .any),
    ])

    /// `{user_ids}` or `{scope, permission?}` or `{scope, assignee}`; `assignee: null` differs
    /// from no `assignee` (NO-6: "the assignee, or every member when there is none").
    struct RecipientsBody: Decodable, Equatable {
        let userIDs: [String]?
        let scope: String?
        let permission: String?
        /// nil: no assignee rule; `.some(nil)`: the rule with nobody assigned.
        let assignee: String??

        enum CodingKeys: String, CodingKey { case user_ids, scope, permission, assignee }

        static let members = BodyMembers.fields("user_ids", "scope", "permission", "assignee")

        init(userIDs: [String]?, scope: String?, permission: String?, assignee: String??) {
            self.userIDs = userIDs
            self.scope = scope
            self.permission = permission
            self.assignee = assignee
        }

        init(from decoder: Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            userIDs = try container.decodeIfPresent([String].self, forKey: .user_ids)
            scope = try container.decodeIfPresent(String.self, forKey: .scope)
            permission = try container.decodeIfPresent(String.self, forKey: .permission)
            if container.contains(.assignee) {
                assignee = .some(try container.decodeNil(forKey: .assignee) ? nil : container.decode(String.self, forKey: .assignee))
            } else {
                assignee = nil
            }
        }
    }

    /// One text for every locale, or a per-locale map (`{"pt": "…", "en": "…"}`).
    enum TextInput: Decodable, Equatable {
        case single(String)
        case byLocale([String: String])

        init(from decoder: Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let text = try? container.decode(String.self) {
                self = .single(text)
            } else {
                self = .byLocale(try container.decode([String: String].self))
            }
        }
    }

    /// A unix-ms integer or an RFC 3339 string.
    enum Instant: Decodable, Equatable {
        case milliseconds(Int64)
        case text(String)

        init(from decoder: Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let value = try? container.decode(Int64.self) {
                self = .milliseconds(value)
            } else {
                self = .text(try container.decode(String.self))
            }
        }
    }

    /// `data`: flat strings; and, for an app with a payload root key (AP-4), the data may come
    /// already namespaced, `{"<root>": {flat strings}}`, as the app's SDK will read it.
    /// `NotificationRequest` decides whether an object is allowed where it is.
    struct DataInput: Decodable, Equatable, ExpressibleByDictionaryLiteral {
        /// The string values by key.
        var strings: [String: String]
        /// The object values (each of strings) by key.
        var objects: [String: [String: String]]

        init(strings: [String: String], objects: [String: [String: String]] = [:]) {
            self.strings = strings
            self.objects = objects
        }

        typealias Key = String
        typealias Value = String

        init(dictionaryLiteral elements: (String, String)...) {
            self.init(strings: Dictionary(elements, uniquingKeysWith: { $1 }))
        }

        private enum Member: Decodable {
            case string(String)
            case object([String: String])

            init(from decoder: Decoder) throws {
                let container = try decoder.singleValueContainer()
                if let text = try? container.decode(String.self) {
                    self = .string(text)
                } else if let object = try? container.decode([String: String].self) {
                    self = .object(object)
                } else {
                    throw DecodingError.typeMismatch(String.self, .init(
                        codingPath: decoder.codingPath, debugDescription: "data values are strings (or, under the payload root key, an object of strings)"))
                }
            }
        }

        init(from decoder: Decoder) throws {
            let values = try decoder.singleValueContainer().decode([String: Member].self)
            var strings: [String: String] = [:], objects: [String: [String: String]] = [:]
            for (key, value) in values {
                switch value {
                case .string(let text): strings[key] = text
                case .object(let object): objects[key] = object
                }
            }
            self.init(strings: strings, objects: objects)
        }
    }

    /// A number, or `"unread"`: the recipient's unread inbox count when planned.
    enum Badge: Decodable, Equatable {
        case number(Int)
        case keyword(String)

        init(from decoder: Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let value = try? container.decode(Int.self) {
                self = .number(value)
            } else {
                self = .keyword(try container.decode(String.self))
            }
        }
    }

    struct LiveBody: Decodable, Equatable {
        let channel: String
        let event: String?
        let data: JSONValue?
        let retain: Bool?

        static let members = BodyMembers.fields("channel", "event", "data", "retain")
    }

    struct PushBody: Decodable, Equatable {
        let policy: String?
        let ack_window_ms: Int?
        let type: String?

        static let members = BodyMembers.object([("policy", .any), ("ack_window_ms", .wholeNumber), ("type", .any)])
    }
}
