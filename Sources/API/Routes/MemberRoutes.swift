import HeraldCore
import Realtime

/// Scope membership with permissions, synced by the app backend (NO-6): the recipients rules
/// `{scope, permission}` and `{scope, assignee}` read it, and so does `available_events`.
struct MemberRoutes {
    let authenticator: Authenticator
    let responder: DatabaseResponder

    struct PutBody: JSONBody {
        let permissions: [String]

        static let members = BodyMembers.fields("permissions")
    }

    func register(in table: inout RouteTable) {
        let routes = self
        table.on(Spec.listMembers) { context in try routes.list(context) }
        table.on(Spec.putMember) { context in try routes.put(context) }
        table.on(Spec.deleteMember) { context in try routes.delete(context) }
    }

    private func path(_ context: RequestContext) throws(HTTPError) -> (scope: String, userID: String?) {
        guard let scope = context.pathParameters["scope"], NotificationRequest.isName(scope, max: 200) else {
            throw HTTPError.invalid("scope", "scope must be 1-200 characters of A-Z a-z 0-9 _ - . :")
        }
        if let userID = context.pathParameters["user_id"] {
            guard ChannelName.personal(userID: userID) != nil else { throw HTTPError.invalid("user_id", "not a valid user id") }
            return (scope, userID)
        }
        return (scope, nil)
    }

    /// `PUT /v1/scopes/{scope}/members/{user_id} {permissions}` → 201 when new, 200 when updated.
    func put(_ context: RequestContext) throws -> RouteResult {
        let app = try authenticator.server(context).rawValue
        let (scope, userID) = try path(context)
        let body = try RequestBody.decode(PutBody.self, from: context.request)
        guard body.permissions.count <= 200 else { throw HTTPError.invalid("permissions", "at most 200 permissions") }
        for permission in body.permissions where !NotificationRequest.isName(permission) {
            throw HTTPError.invalid("permissions", "'\(permission)' is not a permission name (1-64 of A-Z a-z 0-9 _ - . :)")
        }
        let member = ScopeMember(app: app, scope: scope, userID: userID!, permissions: Array(Set(body.permissions)).sorted(), updatedAt: unixMilliseconds())
        return responder.write { tx in
            let created = try tx.members.put(member)
            return .json(created ? 201 : 200, Self.json(member))
        }
    }

    /// `DELETE /v1/scopes/{scope}/members/{user_id}` → 204, or 404 when not a member.
    func delete(_ context: RequestContext) throws -> RouteResult {
        let app = try authenticator.server(context).rawValue
        let (scope, userID) = try path(context)
        return responder.write { tx in
            guard try tx.members.delete(app: app, scope: scope, userID: userID!) else {
                throw HTTPError(404, "not_found", "\(userID!) is not a member of \(scope)")
            }
            return .empty(204)
        }
    }

    /// `GET /v1/scopes/{scope}/members?cursor=&limit=` → `{members, next_cursor}` by user id.
    func list(_ context: RequestContext) throws -> RouteResult {
        let app = try authenticator.server(context).rawValue
        let (scope, _) = try path(context)
        let limit = try context.request.queryNumber("limit", in: 1...1000, otherwise: "limit must be 1-1000") ?? 100
        let after = try context.request.queryValue("cursor")
        // The previous page's next_cursor is a user id; anything else would silently list from
        // wherever it sorts (an empty or a wrong page), as no other route's cursor does.
        if let after, ChannelName.personal(userID: after) == nil {
            throw HTTPError.invalid("cursor", "cursor is the next_cursor of a previous page")
        }
        let pageSize = limit
        return responder.read { tx in
            let members = try tx.members.list(app: app, scope: scope, after: after, limit: pageSize)
            let next = members.count == pageSize ? members.last.map { JSONText.quote($0.userID) } ?? "null" : "null"
            return .json(200, "{\"scope\":\(JSONText.quote(scope)),\"members\":[" + members.map(Self.json).joined(separator: ",")
                + "],\"next_cursor\":\(next)}")
        }
    }

    private static func json(_ member: ScopeMember) -> String {
        "{\"scope\":\(JSONText.quote(member.scope)),\"user_id\":\(JSONText.quote(member.userID)),"
            + "\"permissions\":\(JSONText.array(member.permissions)),"
            + "\"updated_at\":\(JSONText.quote(Timestamp.iso8601(milliseconds: member.updatedAt)))}"
    }
}
