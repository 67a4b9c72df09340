import Foundation
import HeraldCore
import Realtime

/// `GET /v1/stream` (RT-1, RT-3, RT-5): authenticates, grants channels, and hands the
/// connection to the SSE transport.
struct StreamRoutes {
    let authenticator: Authenticator
    let configuration: APIConfiguration
    let sessions: SessionToucher

    func register(in table: inout RouteTable) {
        let routes = self
        table.on(Spec.openStream) { context in try routes.openStream(context) }
    }

    func openStream(_ context: RequestContext) throws -> RouteResult {
        let claims = try authenticator.client(context, now: unixSeconds())
        guard let personal = ChannelName.personal(userID: claims.subject) else {
            throw HTTPError(401, "invalid_token", "the token's sub cannot name a channel (1-\(AccessClaims.maxSubjectLength) characters of A-Z a-z 0-9 _ - : . @)")
        }
        // Checked as the client names them, then put in the app's namespace (ADR 0006).
        let channels = try requestedChannels(context.request, claims: claims, personal: personal)
            .map { ChannelName.scoped($0, app: claims.app.rawValue) }
        sessions.touch(claims)
        guard let state = AppState(try context.request.queryValue("state") ?? "foreground") else {
            throw HTTPError.invalid("state", "state must be foreground or background")
        }
        let lastEventID = try context.request.headers["Last-Event-ID"] ?? context.request.queryValue("last_event_id")
        let resume: ResumePoint
        if let lastEventID, !lastEventID.isEmpty {
            resume = StreamCursor(lastEventID).map(ResumePoint.cursor) ?? .invalid
        } else {
            resume = .fresh
        }
        var request = EventStreamRequest(
            userID: claims.subject, sessionID: claims.sessionID, channels: channels, resume: resume,
            expiresAt: claims.expiresAt.addingSaturating(configuration.leewaySeconds), appState: state)
        request.app = claims.app.rawValue
        return .eventStream(request)
    }

    /// `user:{sub}` first, then each `?channels=` entry the token grants, without duplicates.
    /// - Throws: 400 for a malformed name or too many; 403 `forbidden_channel`
    ///   naming the first channel the token does not grant.
    func requestedChannels(_ request: HTTPRequest, claims: AccessClaims, personal: ChannelName) throws(HTTPError) -> [ChannelName] {
        let named = try Self.channelNames(request, personal: personal, max: configuration.maxChannelsPerStream)
        let grants = claims.channels.compactMap(ChannelGrant.init)
        for channel in named.dropFirst() where !grants.contains(where: { $0.allows(channel) }) {
            throw HTTPError(403, "forbidden_channel", "the access token does not grant channel \(channel)",
                            field: "channels", extra: ["channel": channel.rawValue])
        }
        return named
    }

    /// The channels `?channels=` names (comma-separated, repeatable), `personal` first when given,
    /// each once in the order first named. Spaces around a name and empty entries (`a,,b`, a
    /// trailing comma, `channels=`) are ignored, as recipients of HTTP lists do (RFC 9110 §5.6.1).
    /// - Parameter max: how many distinct channels besides `personal` may be named: a name given
    ///   twice counts once.
    /// - Throws: 400 `invalid_request` (`field: channels`) for a malformed name or more than `max`
    ///   distinct channels.
    static func channelNames(_ request: HTTPRequest, personal: ChannelName?, max: Int) throws(HTTPError) -> [ChannelName] {
        var channels = personal.map { [$0] } ?? []
        for item in request.queryItems() where item.name == "channels" {
            for entry in item.value.split(separator: ",") {
                let text = entry.trimmingCharacters(in: .whitespaces)
                if text.isEmpty { continue }
                guard let channel = ChannelName(text) else {
                    throw HTTPError.invalid("channels", "'\(text.prefix(64))' is not a valid channel name (1-200 characters of A-Z a-z 0-9 _ - : . @)")
                }
                if channels.contains(channel) { continue }
                guard channels.count - (personal == nil ? 0 : 1) < max else {
                    throw HTTPError.invalid("channels", "at most \(max) channels per stream")
                }
                channels.append(channel)
            }
        }
        return channels
    }
}
