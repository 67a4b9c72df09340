import Dispatch
import Foundation
import HeraldCore
import PushHTTP
import Realtime

/// The web demo (OP-6) and its helpers, registered only in dev mode (`HERALD_DEV=1`).
///
/// - `GET /`, `GET /demo/` and `GET /demo/{file}` serve the files of `HERALD_WEB_DEMO_DIR`.
/// - The `/v1/dev/…` helpers take the demo user's *client* access token and act with server
///   rights, because the server key must never reach a browser: sending a notification (NO-1),
///   its delivery record (NO-8), a channel's presence (RT-7) and, in the local push demo, what
///   the provider double received and where its Web Push endpoints are.
struct DemoRoutes {
    let authenticator: Authenticator
    let directory: String
    let notifications: NotificationRoutes
    let presence: PresenceRoutes
    let pushDouble: DemoPushDouble?

    /// The demo's file types; any other extension is not served.
    static let contentTypes: [String: String] = [
        "html": "text/html; charset=utf-8",
        "js": "text/javascript; charset=utf-8",
        "mjs": "text/javascript; charset=utf-8",
        "css": "text/css; charset=utf-8",
        "json": "application/json",
        "svg": "image/svg+xml",
        "png": "image/png",
        "ico": "image/x-icon",
        "txt": "text/plain; charset=utf-8",
    ]

    /// Largest file served: the demo's files are a few KiB each.
    static let maxFileBytes = 4 << 20

    /// The page scripts and styles come from this origin only; streams may use `ws:`/`wss:`.
    static let contentSecurityPolicy = "default-src 'self'; connect-src 'self' ws: wss:; img-src 'self' data:; "
        + "style-src 'self'; script-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"

    func register(in table: inout RouteTable) {
        let routes = self
        table.on(Spec.demoRoot) { _ in routes.file("index.html") }
        table.on(Spec.demoIndex) { _ in routes.file("index.html") }
        table.on(Spec.demoFile) { context in routes.file(context.pathParameters["file"] ?? "") }
        table.on(Spec.devSendNotification) { context in try routes.sendNotification(context) }
        table.on(Spec.devNotificationDeliveries) { context in try routes.deliveries(context) }
        table.on(Spec.devChannelPresence) { context in try routes.channelPresence(context) }
        table.on(Spec.devPushDoubleRequests) { context in try routes.pushDoubleRequests(context) }
        table.on(Spec.devPushDouble) { context in try routes.pushDoubleLocation(context) }
    }

    // MARK: - Files

    /// One file of the demo directory. Only a plain name (no `/`, no leading dot) with a known
    /// extension that the directory listing holds is read, so no path leaves the directory.
    func file(_ name: String) -> RouteResult {
        guard Self.isServableName(name), let type = Self.contentTypes[Self.fileExtension(name)] else {
            return .response(Self.fileNotFound(name))
        }
        let directory = self.directory
        return .deferred { writer in
            // File reads block: keep them off the event loop.
            DispatchQueue.global(qos: .userInitiated).async {
                let listing = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
                let path = directory.hasSuffix("/") ? directory + name : directory + "/" + name
                guard listing.contains(name),
                      let attributes = try? FileManager.default.attributesOfItem(atPath: path),
                      attributes[.type] as? FileAttributeType == .typeRegular,
                      ((attributes[.size] as? NSNumber)?.intValue ?? Int.max) <= Self.maxFileBytes,
                      let data = FileManager.default.contents(atPath: path) else {
                    writer.complete(Self.fileNotFound(name))
                    return
                }
                var response = HTTPResponse(status: 200, body: Array(data))
                response.headers.add(name: "Content-Type", value: type)
                response.headers.add(name: "Cache-Control", value: "no-cache")
                response.headers.add(name: "X-Content-Type-Options", value: "nosniff")
                if type.hasPrefix("text/html") {
                    response.headers.add(name: "Content-Security-Policy", value: Self.contentSecurityPolicy)
                    response.headers.add(name: "Referrer-Policy", value: "no-referrer")
                }
                writer.complete(response)
            }
        }
    }

    /// 1-100 characters of `A-Z a-z 0-9 . _ -`, starting with a letter or digit.
    static func isServableName(_ name: String) -> Bool {
        let utf8 = name.utf8
        guard let first = utf8.first, (1...100).contains(utf8.count), first.isASCIILetterOrDigit else { return false }
        return utf8.allSatisfy { $0.isASCIILetterOrDigit || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-") }
    }

    static func fileExtension(_ name: String) -> String {
        guard let dot = name.lastIndex(of: ".") else { return "" }
        return String(name[name.index(after: dot)...]).lowercased()
    }

    private static func fileNotFound(_ name: String) -> HTTPResponse {
        HTTPError(404, "not_found", "the web demo has no file '\(name.prefix(100))'").response
    }

    // MARK: - Dev helpers

    /// `POST /v1/dev/notifications`: the `POST /v1/notifications` body, sent as the app backend
    /// would; `recipients` defaults to the caller.
    func sendNotification(_ context: RequestContext) throws -> RouteResult {
        let claims = try authenticator.client(context, now: unixSeconds())
        let probe = try RequestBody.decode(lenient: RecipientsProbe.self, from: context.request)
        var request = context.request
        if !probe.hasRecipients {
            request.body = try Self.insertingRecipients(userID: claims.subject, into: request.body)
        }
        return try notifications.submit(NotificationRoutes.body(request), app: claims.app.rawValue)
    }

    /// `GET /v1/dev/notifications/{id}/deliveries`: as the server-key route answers.
    func deliveries(_ context: RequestContext) throws -> RouteResult {
        let claims = try authenticator.client(context, now: unixSeconds())
        return notifications.deliveryRecord(id: context.pathParameters["id"] ?? "", app: claims.app.rawValue)
    }

    /// `GET /v1/dev/channels/{name}/presence`: as the server-key route answers.
    func channelPresence(_ context: RequestContext) throws -> RouteResult {
        let claims = try authenticator.client(context, now: unixSeconds())
        return try presence.channelPresence(named: context.pathParameters["name"], app: claims.app.rawValue)
    }

    /// `GET /v1/dev/push-double/requests?since=&provider=`: the provider double's request log
    /// (APNs and FCM requests with headers, payload, decoded JWT and verdict) as
    /// `{"requests": […]}`; 404 `push_demo_off` unless the local push demo runs.
    func pushDoubleRequests(_ context: RequestContext) throws -> RouteResult {
        _ = try authenticator.client(context, now: unixSeconds())
        guard let double = pushDouble else {
            throw HTTPError(404, "push_demo_off", "the local push demo is not running (start Herald with HERALD_DEMO_PUSH=1 scripts/run)")
        }
        var query = "provider="
        if let provider = try context.request.queryValue("provider") {
            let names = provider.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            guard !names.isEmpty, names.allSatisfy({ ["apns", "fcm", "webpush", "oauth"].contains($0) }) else {
                throw HTTPError.invalid("provider", "provider is a comma-separated list of apns, fcm, webpush and oauth")
            }
            query += names.joined(separator: ",")
        } else {
            query += "apns,fcm,webpush"
        }
        if let since = try context.request.queryNumber("since", in: 0...Int64.max, otherwise: "since is a sequence number (0 or more)") {
            query += "&since=\(since)"
        }
        let base = double.baseURL.hasSuffix("/") ? String(double.baseURL.dropLast()) : double.baseURL
        let url = base + "/_double/requests?" + query
        let caFile = double.caFile
        return .deferred { writer in
            // A blocking exchange with a loopback service: off the event loop.
            DispatchQueue.global(qos: .userInitiated).async {
                writer.complete(Self.proxiedLog(url: url, caFile: caFile))
            }
        }
    }

    /// `GET /v1/dev/push-double`: `{"base_url", "webpush_endpoint_base"}` of the provider double,
    /// so the page can make a simulated subscription whose endpoint is the double's push service
    /// (headless browsers have none); 404 `push_demo_off` unless the local push demo runs.
    func pushDoubleLocation(_ context: RequestContext) throws -> RouteResult {
        _ = try authenticator.client(context, now: unixSeconds())
        guard let double = pushDouble else {
            throw HTTPError(404, "push_demo_off", "the local push demo is not running (start Herald with HERALD_DEMO_PUSH=1 scripts/run)")
        }
        let base = double.baseURL.hasSuffix("/") ? String(double.baseURL.dropLast()) : double.baseURL
        return .response(.json(200, "{\"base_url\":\(JSONText.quote(base)),\"webpush_endpoint_base\":\(JSONText.quote(base + "/wp/"))}"))
    }

    private static func proxiedLog(url: String, caFile: String?) -> HTTPResponse {
        let answer: PushHTTPResponse
        do {
            answer = try HTTPGet.fetch(url, caFile: caFile)
        } catch {
            return HTTPError(502, "push_double_unreachable", "the provider double did not answer: \(error)").response
        }
        guard answer.status == 200, answer.body.first == UInt8(ascii: "["),
              JSONSyntax.check(answer.body, maxDepth: RequestBody.maxNestingDepth * 2) == nil else {
            return HTTPError(502, "push_double_unreachable", "the provider double answered \(answer.status) without its request log").response
        }
        return .json(200, "{\"requests\":" + String(decoding: answer.body, as: UTF8.self) + "}")
    }

    /// Whether a notification body names its recipients (also when it names them as `null`,
    /// which `NotificationBody` then refuses).
    struct RecipientsProbe: Decodable {
        let hasRecipients: Bool

        enum CodingKeys: String, CodingKey { case recipients }

        init(from decoder: Decoder) throws {
            hasRecipients = try decoder.container(keyedBy: CodingKeys.self).contains(.recipients)
        }
    }

    /// `body` (a JSON object, already checked) with `"recipients":{"user_ids":[userID]}` as its
    /// first member.
    static func insertingRecipients(userID: String, into body: [UInt8]) throws(HTTPError) -> [UInt8] {
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }
        guard let open = body.firstIndex(where: { !isSpace($0) }), body[open] == UInt8(ascii: "{") else {
            throw HTTPError(400, "invalid_request", "the body must be a JSON object")
        }
        let empty = body[(open + 1)...].first(where: { !isSpace($0) }) == UInt8(ascii: "}")
        let member = "\"recipients\":{\"user_ids\":[\(JSONText.quote(userID))]}" + (empty ? "" : ",")
        var out = Array(body[...open])
        out += Array(member.utf8)
        out += body[(open + 1)...]
        return out
    }
}

private extension UInt8 {
    var isASCIILetterOrDigit: Bool {
        (0x30...0x39).contains(self) || (0x41...0x5A).contains(self) || (0x61...0x7A).contains(self)
    }
}
