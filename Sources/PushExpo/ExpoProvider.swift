import Dispatch
import HeraldCore
import PushHTTP
import Synchronization

/// Expo's push service as a `PushProvider` (PU-8a; expo-webpush.md): sends batched into requests
/// of at most 100 messages, tickets classified per message, receipts asked for later
/// (`PushReceiptProvider`, through the worker's `push.receipt` jobs).
///
/// Batching keeps the port's one-push `send`: a send waits up to `batchWindowMilliseconds` for
/// others (the worker hands a claimed round's jobs over within milliseconds of each other), and
/// a batch that reaches 100 goes at once. Each send still gets its own classification, from its
/// own ticket. Expo needs no provider auth token; an access token, when set, is a static bearer.
///
/// # Thread safety
/// `send` and `checkReceipts` may be called from any thread; the pending batch is behind a mutex.
public final class ExpoProvider: PushReceiptProvider {
    /// `expo`.
    public static let id = PushProviderID.expo

    /// Expo's token rule (`ExpoPushToken.validate`).
    public static func validate(token: String) throws(DeviceTokenError) -> String {
        try ExpoPushToken.validate(token)
    }

    /// The SDK's chunk size for receipts (Expo takes up to 1000).
    public let maximumReceiptsPerRequest = 300

    /// URL, access token, batching.
    public let settings: ExpoSettings
    private let transport: any PushTransport
    private let clock: any Clock
    private let timers = DispatchQueue(label: "herald.expo.batch")

    private struct Pending {
        var token: String
        var message: PushJSON
        var sendBy: SendByDeadline?
        var completion: @Sendable (PushClassification) -> Void
    }
    private struct Batch {
        var items: [Pending] = []
        var generation = 0
    }
    private let batch = Mutex(Batch())

    /// - Parameters:
    ///   - settings: `HERALD_EXPO_*`.
    ///   - transport: the HTTP/2 client (Expo speaks HTTPS; libcurl negotiates the version).
    ///   - clock: wall time for TTLs and `Retry-After` dates.
    public init(settings: ExpoSettings, transport: any PushTransport, clock: any Clock = SystemClock()) {
        self.settings = settings
        self.transport = transport
        self.clock = clock
    }

    /// See `PushProvider.send`. The push id is not sent: Expo has no such field (its ticket id
    /// stands for the push from then on). A batch's request is limited to the earliest send-by
    /// deadline of its pushes; a push whose deadline passed while it waited for its batch is not sent.
    public func send(_ notification: PushNotification, to target: PushTarget, pushID: PushID, sendBy: SendByDeadline?,
                     completion: @escaping @Sendable (PushClassification) -> Void) {
        let message: PushJSON
        do throws(PushPayloadError) {
            let nowMilliseconds = clock.unixMilliseconds
            message = try ExpoRequestBuilder.message(for: notification, token: target.token, now: Int(nowMilliseconds / 1000),
                                                     nowMilliseconds: nowMilliseconds)
        } catch {
            return completion(classifyPayloadError(error))
        }
        let (full, scheduleGeneration): ([Pending]?, Int?) = batch.withLock { state in
            state.items.append(Pending(token: target.token, message: message, sendBy: sendBy, completion: completion))
            if state.items.count >= ExpoRequestBuilder.maximumMessagesPerRequest {
                let items = state.items
                state.items = []
                state.generation += 1
                return (items, nil)
            }
            return (nil, state.items.count == 1 ? state.generation : nil)
        }
        if let full { return flush(full) }
        if let generation = scheduleGeneration {
            timers.asyncAfter(deadline: .now() + .milliseconds(settings.batchWindowMilliseconds)) { [self] in
                let items: [Pending] = batch.withLock { state in
                    // A batch that filled up meanwhile went already; this timer belongs to it.
                    guard state.generation == generation, !state.items.isEmpty else { return [] }
                    let items = state.items
                    state.items = []
                    state.generation += 1
                    return items
                }
                if !items.isEmpty { flush(items) }
            }
        }
    }

    /// Sends one request for `batch` and hands each its ticket's classification.
    private func flush(_ batch: [Pending]) { send(batch, regroupingByProject: true) }

    /// Sends `batch` (less the pushes whose send-by deadline passed) as one request.
    ///
    /// Expo takes a request only when every token in it belongs to one Expo project; otherwise it
    /// refuses the whole request with `PUSH_TOO_MANY_EXPERIENCE_IDS` and `details` mapping each
    /// project to its tokens (expo/expo#6771). One device registered with another project's token
    /// (a development build, a misconfigured client) must not cost the other pushes batched with
    /// it, so such a refusal sends each project's pushes again in a request of their own
    /// (`regroupingByProject`), once: a regrouped request refused again is classified as it is.
    private func send(_ batch: [Pending], regroupingByProject: Bool) {
        let clock = self.clock
        let now = clock.unixMilliseconds
        var sendable: [Pending] = []
        sendable.reserveCapacity(batch.count)
        for item in batch {
            if let sendBy = item.sendBy, sendBy.hasPassed(atMilliseconds: now) {
                item.completion(.sendByPassed)
            } else {
                sendable.append(item)
            }
        }
        let items = sendable
        guard !items.isEmpty else { return }
        var request = ExpoRequestBuilder.sendRequest(messages: items.map(\.message), settings: settings)
        let earliest = items.compactMap(\.sendBy).min { $0.unixMilliseconds < $1.unixMilliseconds }
        _ = request.limit(to: earliest, nowMilliseconds: now)   // not passed: checked above
        transport.send(request) { [self] result in
            let verdicts: [PushClassification]
            switch result {
            case .success(let response):
                if regroupingByProject, let groups = expoProjectGroups(response: response, tokens: items.map(\.token)) {
                    for group in groups { send(group.map { items[$0] }, regroupingByProject: false) }
                    return
                }
                verdicts = classifyExpoSend(response: response, count: items.count, now: Int(clock.unixSeconds))
            case .failure(let error):
                verdicts = Array(repeating: classifyTransportError(error), count: items.count)
            }
            for (item, verdict) in zip(items, verdicts) { item.completion(verdict) }
        }
    }

    /// See `PushReceiptProvider.checkReceipts`: one `getReceipts` request.
    public func checkReceipts(_ ids: [String], completion: @escaping @Sendable (PushReceiptAnswer) -> Void) {
        let clock = self.clock
        transport.send(ExpoRequestBuilder.receiptsRequest(ids: ids, settings: settings)) { result in
            switch result {
            case .success(let response): completion(classifyExpoReceipts(response: response, now: Int(clock.unixSeconds)))
            case .failure(let error): completion(.failed(classifyTransportError(error)))
            }
        }
    }
}
