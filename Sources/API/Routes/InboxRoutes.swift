import Foundation
import HeraldCore
import Realtime

/// The inbox over plain GET (NO-3): the live event only invalidates, the data comes from here.
/// Every answer carries `Herald-Cursor`, taken before the read: a client that opens its stream
/// from it gets every event after the state it was shown, so nothing falls between the two.
struct InboxRoutes {
    let authenticator: Authenticator
    let database: any Storage
    let broker: any Broker
    /// Each app's catalog renders its inbox texts.
    let notifier: Notifier

    /// The live event telling a user's other sessions that read state changed.
    static let readEvent = EventName("notification.read")!

    func register(in table: inout RouteTable) {
        let routes = self
        table.on(Spec.listInbox) { context in try routes.list(context) }
        table.on(Spec.unreadCount) { context in try routes.unreadCount(context) }
        table.on(Spec.markAllRead) { context in try routes.readAll(context) }
        table.on(Spec.markRead) { context in try routes.read(context) }
    }

    /// `GET /v1/me/notifications?cursor=&limit=&unread=true&locale=` → `{notifications, next_cursor}`,
    /// newest first. Each text is in the first language it has of: `locale` (else the
    /// `Accept-Language` tags by weight), then the user's language set with `PUT /v1/users/{id}`;
    /// else the catalog's default.
    func list(_ context: RequestContext) throws -> RouteResult {
        let claims = try authenticator.client(context, now: unixSeconds())
        let app = claims.app.rawValue
        let request = context.request
        let limit = try request.queryNumber("limit", in: 1...100, otherwise: "limit must be 1-100") ?? 20
        let before = try request.queryNumber("cursor", in: 1...Int64.max, otherwise: "cursor is the next_cursor of a previous page")
        var unreadOnly = false
        if let raw = try request.queryValue("unread") {
            guard raw == "true" || raw == "false" else { throw HTTPError.invalid("unread", "unread must be true or false") }
            unreadOnly = raw == "true"
        }
        let asked = try Self.locales(request)
        let cursor = position()
        let pageSize = limit, beforeSequence = before, unread = unreadOnly
        let renderer = notifier.profile(app).renderer
        return .deferred { writer in
            database.read({ tx -> ([NotificationRecord], [String]) in
                let records = try tx.notifications.page(app: app, userID: claims.subject, unreadOnly: unread, before: beforeSequence, limit: pageSize)
                // The same fallback as the user's pushes (NO-5): their profile language before the
                // default, also when none of the asked languages has a text.
                let user = try records.isEmpty ? nil : tx.users.find(app: app, userID: claims.subject)?.locale
                return (records, asked + (user.map { [$0] } ?? []))
            }) { result in
                switch result {
                case .failure(let error):
                    writer.complete(DatabaseResponder.response(.failure(error)))
                case .success(let (records, locales)):
                    let next = records.count == pageSize ? records.last.map { "\"\($0.sequence)\"" } ?? "null" : "null"
                    var response = HTTPResponse.json(200, "{\"notifications\":["
                        + records.map { Self.json($0, locales: locales, renderer: renderer) }.joined(separator: ",")
                        + "],\"next_cursor\":\(next)}")
                    response.headers.add(name: "Herald-Cursor", value: cursor)
                    writer.complete(response)
                }
            }
        }
    }

    /// `GET /v1/me/notifications/unread-count` → `{unread_count}`.
    func unreadCount(_ context: RequestContext) throws -> RouteResult {
        let claims = try authenticator.client(context, now: unixSeconds())
        let app = claims.app.rawValue
        let cursor = position()
        return .deferred { writer in
            database.read({ tx in try tx.notifications.unreadCount(app: app, userID: claims.subject) }) { result in
                switch result {
                case .failure(let error):
                    writer.complete(DatabaseResponder.response(.failure(error)))
                case .success(let count):
                    var response = HTTPResponse.json(200, "{\"unread_count\":\(count)}")
                    response.headers.add(name: "Herald-Cursor", value: cursor)
                    writer.complete(response)
                }
            }
        }
    }

    /// `POST /v1/me/notifications/{id}/read` → `{id, read_at, unread_count}`; 404 for another
    /// user's or an unknown id. Marking twice keeps the first time and broadcasts nothing.
    func read(_ context: RequestContext) throws -> RouteResult {
        let claims = try authenticator.client(context, now: unixSeconds())
        let app = claims.app.rawValue
        let id = context.pathParameters["id"] ?? ""
        let broker = self.broker
        return .deferred { writer in
            database.write({ tx in
                let result = try tx.notifications.markRead(app: app, userID: claims.subject, id: id, now: unixMilliseconds())
                return (result, try tx.notifications.unreadCount(app: app, userID: claims.subject))
            }) { result in
                switch result {
                case .failure(let error):
                    writer.complete(DatabaseResponder.response(.failure(error)))
                case .success((.notFound, _)):
                    writer.complete(.error(404, code: "not_found", message: "no such notification"))
                case .success((.alreadyRead(let at), let unread)):
                    writer.complete(.json(200, Self.readJSON(id: id, at: at, unread: unread)))
                case .success((.marked(let at), let unread)):
                    Self.broadcastRead(broker, app: app, userID: claims.subject, ids: [id], unread: unread)
                    writer.complete(.json(200, Self.readJSON(id: id, at: at, unread: unread)))
                }
            }
        }
    }

    /// `POST /v1/me/notifications/read-all` → `{marked, unread_count}`.
    func readAll(_ context: RequestContext) throws -> RouteResult {
        let claims = try authenticator.client(context, now: unixSeconds())
        let app = claims.app.rawValue
        let broker = self.broker
        return .deferred { writer in
            database.write({ tx in
                try tx.notifications.markAllRead(app: app, userID: claims.subject, now: unixMilliseconds())
            }) { result in
                switch result {
                case .failure(let error):
                    writer.complete(DatabaseResponder.response(.failure(error)))
                case .success(let marked):
                    if marked > 0 { Self.broadcastRead(broker, app: app, userID: claims.subject, ids: nil, unread: 0) }
                    writer.complete(.json(200, "{\"marked\":\(marked),\"unread_count\":0}"))
                }
            }
        }
    }

    /// The stream position now, as an SSE id (`Herald-Cursor`).
    private func position() -> String {
        String(describing: StreamCursor(epoch: broker.epoch, sequence: broker.publishedCount))
    }

    /// `notification.read {ids | all, unread_count}` on `user:{id}` of `app`, after the commit.
    private static func broadcastRead(_ broker: any Broker, app: String, userID: String, ids: [String]?, unread: Int) {
        guard let personal = ChannelName.personal(userID: userID) else { return }
        let channel = ChannelName.scoped(personal, app: app)
        let which = ids.map { "\"ids\":" + JSONText.array($0) } ?? "\"all\":true"
        // Best effort: the read state is stored; a client that missed the event sees it on GET.
        _ = try? broker.publish([PublishRequest(channel: channel, event: readEvent, data: "{\(which),\"unread_count\":\(unread)}")])
    }

    private static func readJSON(id: String, at: Int64, unread: Int) -> String {
        "{\"id\":\(JSONText.quote(id)),\"read_at\":\(JSONText.quote(Timestamp.iso8601(milliseconds: at))),\"unread_count\":\(unread)}"
    }

    /// The languages a page is asked in, most wanted first: `?locale=` alone, else the
    /// `Accept-Language` tags by weight (RFC 9110 §12.5.4: `q` 1 when not given, `q=0` and `*`
    /// left out, ties in the order given; at most 16, a malformed element skipped), else none.
    /// - Throws: `HTTPError` 400 naming `locale` when `?locale=` is not a language tag.
    static func locales(_ request: HTTPRequest) throws(HTTPError) -> [String] {
        if let raw = try request.queryValue("locale") {
            guard let tag = LocaleTag(raw) else {
                throw HTTPError.invalid("locale", "locale is a BCP 47 language tag such as pt-BR or en (RFC 5646)")
            }
            return [tag.rawValue]
        }
        var weighted: [(tag: String, q: Double)] = []
        for field in request.headers.values("Accept-Language") {
            for element in field.split(separator: ",") where weighted.count < 16 {
                let parts = element.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
                guard let first = parts.first, let tag = LocaleTag(first) else { continue }
                var q = 1.0
                for parameter in parts.dropFirst() where parameter.lowercased().hasPrefix("q=") {
                    q = Double(parameter.dropFirst(2)).flatMap { (0...1).contains($0) ? $0 : nil } ?? -1
                }
                if q > 0 { weighted.append((tag.rawValue, q)) }
            }
        }
        // A stable sort: equal weights keep the order given.
        return weighted.enumerated().sorted { ($0.element.q, -$0.offset) > ($1.element.q, -$1.offset) }.map(\.element.tag)
    }

    /// One inbox item; texts rendered in the first of `locales` each has. When neither title nor
    /// body renders (the kind is no longer in the catalog), `title` is the kind and the others are nil.
    static func json(_ record: NotificationRecord, locales: [String], renderer: NotificationRenderer) -> String {
        func map(_ json: String?) -> [String: String]? {
            json.flatMap { try? JSONDecoder().decode([String: String].self, from: Data($0.utf8)) }
        }
        let data = map(record.dataJSON) ?? [:]
        // A catalog changed since the notification was stored may no longer render it: the item
        // still lists rather than failing the whole page.
        let title = map(record.titleJSON).flatMap { try? NotificationPlan.localized($0) }
        let body = map(record.bodyJSON).flatMap { try? NotificationPlan.localized($0) }
        let rendered = try? renderer.render(kind: record.kind, locales: locales, title: title, body: body,
                                            arguments: map(record.argsJSON) ?? [:], data: data, collapseKey: record.collapseKey,
                                            threadID: record.threadID)
        func string(_ value: String?) -> String { value.map(JSONText.quote) ?? "null" }
        // Nothing renders (its kind left the catalog, and the call had no texts of its own): the
        // kind is the one text the item still has, so a list never shows an untitled row.
        let shownTitle = rendered?.title ?? (rendered?.body == nil ? record.kind : nil)
        return "{\"id\":\(JSONText.quote(record.id)),\"kind\":\(JSONText.quote(record.kind)),\"scope\":\(string(record.scope)),"
            + "\"title\":\(string(shownTitle)),\"subtitle\":\(string(rendered?.subtitle)),\"body\":\(string(rendered?.body)),"
            + "\"locale\":\(string(rendered?.locale)),\"data\":\(record.dataJSON),\"priority\":\(JSONText.quote(record.priority)),"
            + "\"read\":\(record.readAt != nil),\"read_at\":\(record.readAt.map { JSONText.quote(Timestamp.iso8601(milliseconds: $0)) } ?? "null"),"
            + "\"event_id\":\(string(record.cursor)),"
            + "\"created_at\":\(JSONText.quote(Timestamp.iso8601(milliseconds: record.createdAt)))}"
    }
}
