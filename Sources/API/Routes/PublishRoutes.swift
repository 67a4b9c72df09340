import HeraldCore
import Realtime

/// `POST /v1/publish` and `POST /v1/publish/batch` (RT-4), and `DELETE /v1/channels/{name}/retained`
/// (RT-6, ADR 0028), server key only.
///
/// A publish is answered at once while the event loops keep up; when some loop is behind
/// (`PublishPacer.isBehind`), the answer waits until every loop has written what it was handed,
/// this publish included, so a publisher that waits for its answers paces itself to the loops
/// (issue 17: otherwise a closed-loop publisher's backlog, and so every message's latency,
/// grows for as long as the burst lasts).
struct PublishRoutes {
    let authenticator: Authenticator
    let configuration: APIConfiguration
    let broker: any Broker
    let pacer: any PublishPacer

    /// One message as the app backend sends it.
    struct MessageBody: JSONBody {
        let channel: String
        let event: String?
        let data: JSONValue
        let retain: Bool?

        static let members = BodyMembers.fields("channel", "event", "data", "retain")
    }

    struct BatchBody: JSONBody {
        let messages: [MessageBody]

        static let members = BodyMembers.object([("messages", .array(MessageBody.members))])
    }

    func register(in table: inout RouteTable) {
        let routes = self
        table.on(Spec.publish) { context in try routes.publish(context) }
        table.on(Spec.publishBatch) { context in try routes.publishBatch(context) }
        table.on(Spec.clearRetained) { context in try routes.clearRetained(context) }
    }

    /// `DELETE /v1/channels/{name}/retained`: forgets the channel's retained message (ADR 0028);
    /// 204 whether it had one or not.
    /// - Throws: `HTTPError` 400 when `name` is not a channel name, 503 `broker_unavailable`.
    func clearRetained(_ context: RequestContext) throws -> RouteResult {
        let app = try authenticator.server(context).rawValue
        guard let raw = context.pathParameters["name"], let named = ChannelName(raw) else {
            throw HTTPError.invalid("name", "not a valid channel name")
        }
        do {
            try broker.clearRetained(ChannelName.scoped(named, app: app))
        } catch {
            Self.brokerFailureLog.write(error)
            throw HTTPError(503, "broker_unavailable", error.mayHaveTakenEffect ? Self.unconfirmedClearMessage : Self.unavailableClearMessage)
        }
        return .response(.empty(204))
    }

    func publish(_ context: RequestContext) throws -> RouteResult {
        let app = try authenticator.server(context).rawValue
        try RequestBody.check(context.request)
        var request: PublishRequest
        switch PublishBodyScanner.message(context.request.body) {
        case .value(let message):
            request = try validate(channel: message.channel, event: message.event, data: message.data, retain: message.retain, field: "")
        case .duplicate(let field):
            throw HTTPError.invalid(field, "\(field) is given twice")
        case .unknown(let key, let path):
            throw RequestBody.unknownMember(key, at: path, in: MessageBody.members)
        case .fallback:
            let body = try RequestBody.decode(MessageBody.self, from: context.request)
            request = try validate(body, field: "")
        }
        // The key's app namespace (ADR 0006): another app's subscribers never see it.
        request.channel = ChannelName.scoped(request.channel, app: app)
        let receipt = try Self.publish([request], on: broker)[0]
        return answer(.json(200, Self.json(receipt)))
    }

    func publishBatch(_ context: RequestContext) throws -> RouteResult {
        let app = try authenticator.server(context).rawValue
        try RequestBody.check(context.request)
        let messages: [(channel: String, event: String?, data: String, retain: Bool?)]
        switch PublishBodyScanner.batch(context.request.body) {
        case .value(let scanned):
            messages = scanned.map { ($0.channel, $0.event, $0.data, $0.retain) }
        case .duplicate(let field):
            throw HTTPError.invalid(field, "\(field) is given twice")
        case .unknown(let key, let path):
            throw RequestBody.unknownMember(key, at: path, in: MessageBody.members)
        case .fallback:
            let body = try RequestBody.decode(BatchBody.self, from: context.request)
            messages = body.messages.map { ($0.channel, $0.event, $0.data.compactText, $0.retain) }
        }
        guard !messages.isEmpty else { throw HTTPError.invalid("messages", "messages must not be empty") }
        guard messages.count <= configuration.maxBatchMessages else {
            throw HTTPError.invalid("messages", "at most \(configuration.maxBatchMessages) messages per batch")
        }
        // Validate all first: a batch with one bad message publishes nothing.
        var requests: [PublishRequest] = []
        for (index, message) in messages.enumerated() {
            var request = try validate(channel: message.channel, event: message.event, data: message.data, retain: message.retain,
                                       field: "messages[\(index)].")
            request.channel = ChannelName.scoped(request.channel, app: app)
            requests.append(request)
        }
        let receipts = try Self.publish(requests, on: broker)
        return answer(.json(200, "{\"results\":[" + receipts.map(Self.json).joined(separator: ",") + "]}"))
    }

    /// `response` now, or once the loops have caught up when they are behind (back-pressure).
    private func answer(_ response: HTTPResponse) -> RouteResult {
        guard pacer.isBehind else { return .response(response) }
        let pacer = pacer
        return .deferred { writer in
            pacer.afterPendingDeliveries(timeoutNanoseconds: Self.pacingTimeoutNanoseconds) { writer.complete(response) }
        }
    }

    /// The longest a publish's answer waits for the loops: a wedged loop must not hold publishers
    /// (the message is published either way; only the answer waits).
    static let pacingTimeoutNanoseconds: UInt64 = 1_000_000_000

    private func validate(_ body: MessageBody, field prefix: String) throws(HTTPError) -> PublishRequest {
        try validate(channel: body.channel, event: body.event, data: body.data.compactText, retain: body.retain, field: prefix)
    }

    /// - Parameter data: the message's compact JSON text.
    private func validate(channel rawChannel: String, event rawEvent: String?, data: String, retain: Bool?,
                          field prefix: String) throws(HTTPError) -> PublishRequest {
        guard let channel = ChannelName(rawChannel) else {
            throw HTTPError.invalid(prefix + "channel", "channel must be 1-200 characters of A-Z a-z 0-9 _ - : . @")
        }
        var event = EventName.message
        if let raw = rawEvent {
            guard let name = EventName(raw) else {
                throw HTTPError.invalid(prefix + "event", "event must be 1-64 characters of A-Z a-z 0-9 _ - . :")
            }
            guard !name.isReserved else {
                throw HTTPError.invalid(prefix + "event", "'\(raw)' is reserved by the stream protocol (\(EventName.reserved.sorted().joined(separator: ", ")))")
            }
            event = name
        }
        guard data.utf8.count <= configuration.maxDataBytes else {
            throw HTTPError(413, "payload_too_large", "data is \(data.utf8.count) bytes; the limit is \(configuration.maxDataBytes)",
                            field: prefix + "data")
        }
        return PublishRequest(channel: channel, event: event, data: data, retain: retain ?? false)
    }

    private static let brokerFailureLog = ThrottledErrorLog("publish failed: the broker is unavailable")

    /// Publishes, mapping a broker failure to 503 `broker_unavailable`. Its message says whether
    /// nothing was published or the broker may have published it anyway (its answer timed out or
    /// was lost: a retry may then deliver the message twice), so a caller can tell them apart.
    private static func publish(_ requests: [PublishRequest], on broker: any Broker) throws(HTTPError) -> [PublishReceipt] {
        do {
            return try broker.publish(requests)
        } catch {
            brokerFailureLog.write(error)
            throw HTTPError(503, "broker_unavailable", error.mayHaveTakenEffect ? unconfirmedMessage : unavailableMessage)
        }
    }

    /// The 503's message when the broker refused the publish: nothing was published.
    static let unavailableMessage = "the broker cannot be reached; nothing was published, retry shortly"
    /// The 503's message when the broker's answer timed out or was lost after the publish was sent.
    static let unconfirmedMessage = "the broker did not confirm the publish; it may still reach subscribers, and a retry may deliver it twice"

    /// The 503's message when the broker refused the clear: the retained message is still there.
    static let unavailableClearMessage = "the broker cannot be reached; the retained message was not cleared, retry shortly"
    /// The 503's message when the clear was sent and its answer lost.
    static let unconfirmedClearMessage = "the broker did not confirm the clear; it may have been cleared, retry to be sure"

    private static func json(_ receipt: PublishReceipt) -> String {
        "{\"id\":\"\(receipt.message.cursor)\",\"channel\":\(JSONText.quote(receipt.message.channel.clientName)),\"offset\":\(receipt.message.offset),\"delivered\":\(receipt.delivered)}"
    }
}
