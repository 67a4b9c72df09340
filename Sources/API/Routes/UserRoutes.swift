import HeraldCore
import Realtime

/// Users' profiles, set by the app backend (server key): today their language, which a push to a
/// device registered without a locale is written in, before the app's default (NO-5; seed 000:
/// "without it, the user's profile language").
struct UserRoutes {
    let authenticator: Authenticator
    let responder: DatabaseResponder

    /// `{"locale": "pt-BR"}`; `null` clears it. The member must be present: an empty object would
    /// otherwise read as "clear", which a typo (`"lang"`) must not do.
    struct PutBody: Decodable {
        let locale: String?

        enum Members: String, CodingKey, CaseIterable {
            case locale
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Members.self)
            guard container.contains(.locale) else {
                throw HTTPError.invalid("locale", "locale is required: a BCP 47 language tag such as pt-BR, or null to clear it")
            }
            locale = try container.decodeIfPresent(String.self, forKey: .locale)
        }
    }

    func register(in table: inout RouteTable) {
        let routes = self
        table.on(Spec.getUser) { context in try routes.get(context) }
        table.on(Spec.putUser) { context in try routes.put(context) }
    }

    private func userID(_ context: RequestContext) throws(HTTPError) -> String {
        guard let id = context.pathParameters["id"], ChannelName.personal(userID: id) != nil else {
            throw HTTPError.invalid("id", "not a valid user id (1-195 of A-Z a-z 0-9 _ : . @ -)")
        }
        return id
    }

    /// `PUT /v1/users/{id} {"locale"}` → 201 when the user had no profile, 200 when updated.
    func put(_ context: RequestContext) throws -> RouteResult {
        try authenticator.server(context)
        let userID = try userID(context)
        let body = try RequestBody.decode(PutBody.self, from: context.request, members: PutBody.Members.self)
        var locale: String?
        if let raw = body.locale {
            guard let tag = LocaleTag(raw) else { throw HTTPError.invalid("locale", "locale must be a BCP 47 language tag such as pt-BR, or null") }
            locale = tag.rawValue
        }
        let profile = UserProfile(userID: userID, locale: locale, updatedAt: unixMilliseconds())
        return responder.write { tx in
            let created = try tx.users.put(profile)
            return .json(created ? 201 : 200, Self.json(profile))
        }
    }

    /// `GET /v1/users/{id}` → the profile; a user the app never set answers with `locale: null`
    /// and `updated_at: null` rather than 404: every user id is a user to Herald.
    func get(_ context: RequestContext) throws -> RouteResult {
        try authenticator.server(context)
        let userID = try userID(context)
        return responder.read { tx in
            let profile = try tx.users.find(userID: userID)
            return .json(200, profile.map(Self.json) ?? "{\"user_id\":\(JSONText.quote(userID)),\"locale\":null,\"updated_at\":null}")
        }
    }

    private static func json(_ profile: UserProfile) -> String {
        "{\"user_id\":\(JSONText.quote(profile.userID)),\"locale\":\(profile.locale.map(JSONText.quote) ?? "null"),"
            + "\"updated_at\":\(JSONText.quote(Timestamp.iso8601(milliseconds: profile.updatedAt)))}"
    }
}
