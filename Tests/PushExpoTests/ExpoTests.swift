import CZlib
import Dispatch
import Foundation
import HeraldCore
import PushHTTP
import PushTestSupport
import Synchronization
import Testing

@testable import PushExpo

/// gunzip for checking request bodies.
func gunzip(_ bytes: [UInt8]) -> [UInt8]? {
    var stream = z_stream()
    guard inflateInit2_(&stream, 15 + 16, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else { return nil }
    defer { inflateEnd(&stream) }
    var input = bytes
    var output = [UInt8](repeating: 0, count: 1 << 20)
    let status: Int32 = input.withUnsafeMutableBufferPointer { source in
        output.withUnsafeMutableBufferPointer { target in
            stream.next_in = source.baseAddress
            stream.avail_in = uInt(source.count)
            stream.next_out = target.baseAddress
            stream.avail_out = uInt(target.count)
            return inflate(&stream, Z_FINISH)
        }
    }
    guard status == Z_STREAM_END else { return nil }
    return Array(output.prefix(Int(stream.total_out)))
}

func json(_ bytes: [UInt8]) throws -> Any { try JSONSerialization.jsonObject(with: Data(bytes)) }

/// The body of a request as sent, decompressed when it says gzip.
func plainBody(_ request: PushHTTPRequest) -> [UInt8] {
    request.headers.contains { $0 == ("content-encoding", "gzip") } ? (gunzip(request.body) ?? []) : request.body
}

@Suite struct ExpoRequestBuilderTests {
    let now = 1_754_563_200

    func message(_ notification: PushNotification) throws -> [String: Any] {
        try #require(try json(ExpoRequestBuilder.message(for: notification, token: "ExponentPushToken[a]", now: now).bytes) as? [String: Any])
    }

    /// api14: Expo's 4096 bytes are UTF-8 bytes of JSON (Expo's docs: the payload sent to Apple
    /// and Google), so `é` counts 2, not the 6 of `\u00e9`: a 3,000-byte accented body goes whole,
    /// and one over the limit is cut to fit in UTF-8 bytes, far longer than an escaped count allows.
    @Test func aLongNonASCIIAlertIsCountedInUTF8Bytes() throws {
        let whole = String(repeating: "é", count: 1500)
        let sent = try message(PushNotification(title: "Pedido", body: whole))
        #expect(sent["body"] as? String == whole)
        let long = try message(PushNotification(title: "Pedido", body: String(repeating: "ã", count: 2100)))
        let body = try #require(long["body"] as? String)
        #expect(body.hasSuffix("…") && body.count > 1900, "cut to fit UTF-8 bytes: \(body.count) characters")
        var rest = long
        rest["to"] = nil
        let bytes = try JSONSerialization.data(withJSONObject: rest).count   // Foundation writes non-ASCII as UTF-8
        #expect(bytes <= ExpoRequestBuilder.maximumPayloadBytes && bytes > 4000, "\(bytes)")
    }

    @Test func seed001AlertMapsEveryField() throws {
        var notification = PushNotification.seed001
        notification.priority = .urgent
        let m = try message(notification)
        #expect(m["to"] as? String == "ExponentPushToken[a]")
        #expect(m["title"] as? String == "Pedido #1042 pago" && m["subtitle"] as? String == "Loja Azul")
        #expect(m["body"] as? String == "R$ 1.234,56 · Ana Souza" && m["sound"] as? String == "default" && m["badge"] as? Int == 3)
        #expect(m["ttl"] as? Int == 3600 && m["priority"] as? String == "high" && m["channelId"] as? String == "orders")
        #expect(m["interruptionLevel"] as? String == "time-sensitive")
        #expect(m["collapseId"] as? String == "order-paid-0199b7e2" && m["tag"] as? String == "order-paid-0199b7e2")
        // The app's keys inside `data`, where expo-notifications hands them to the app.
        #expect(m["data"] as? [String: String] == ["kind": "orders.paid", "store_id": "0199a0c4", "order_id": "0199b7e2"])
        #expect(m["_contentAvailable"] == nil && m["thread-id"] == nil && m["kind"] == nil)
    }

    @Test func normalAlertsUseExposDefaultPriority() throws {
        #expect(try message(PushNotification(title: "t", priority: .normal))["priority"] as? String == "default")
        #expect(try message(PushNotification(title: "t", priority: .high))["priority"] as? String == "high")
    }

    @Test func wakeupIsContentAvailableAtNormalPriority() throws {
        let m = try message(.wakeup(data: ["generation_id": "g-1"], ttlSeconds: 0))
        #expect(m["_contentAvailable"] as? Bool == true && m["priority"] as? String == "normal" && m["ttl"] as? Int == 0)
        #expect(m["data"] as? [String: String] == ["generation_id": "g-1"])
        #expect(m["title"] == nil && m["body"] == nil && m["sound"] == nil && m["badge"] == nil)
    }

    /// ADR 0020: without a collapse key or tag the notification's id is an alert's `tag` (Android
    /// replaces a shown notification with the same tag, so a resend shows once); `collapseId` stays
    /// the caller's only, and a wake-up gets neither.
    @Test func theNotificationIDIsTheTagOfAnAlertOnly() throws {
        let id = "ntf_01jf3k9q7m2x8c4v5b6n7"
        var alert = try message(PushNotification(title: "t", notificationID: id))
        #expect(alert["tag"] as? String == id && alert["collapseId"] == nil)
        alert = try message(PushNotification(title: "t", collapseKey: "order-77", notificationID: id))
        #expect(alert["tag"] as? String == "order-77" && alert["collapseId"] as? String == "order-77")
        let wakeup = try message(.wakeup(data: ["m": "1"], notificationID: id))
        #expect(wakeup["tag"] == nil && wakeup["collapseId"] == nil)
    }

    @Test func rootKeyNestsTheData() throws {
        let m = try message(PushNotification(title: "t", data: ["type": "message"], rootKey: "respondo"))
        #expect((m["data"] as? [String: Any])?["respondo"] as? [String: String] == ["type": "message"])
    }

    @Test func limitsAndExpiry() throws {
        #expect(throws: PushPayloadError.expired) { try message(PushNotification(title: "t", expiresAt: now)) }
        #expect(try message(PushNotification(title: "t", expiresAt: now + 90))["ttl"] as? Int == 90)
        #expect(throws: PushPayloadError.self) { try message(PushNotification(title: "t", data: ["k": String(repeating: "v", count: 4096)])) }
        _ = try message(PushNotification(title: "t", data: ["k": String(repeating: "v", count: 4000)]))
    }

    /// Issue 17 (NO-2): Expo's `ttl` of a millisecond expiry is the time left rounded down.
    @Test func ttlOfAMillisecondExpiryIsRoundedDown() throws {
        let nowMs = Int64(now) * 1000 + 250
        func ttl(expiresInMs: Int) throws -> Int? {
            let at = Int(nowMs) + expiresInMs
            let message = try ExpoRequestBuilder.message(for: PushNotification(title: "t", expiresAt: (at + 999) / 1000, expiresAtMilliseconds: at),
                                                         token: "ExponentPushToken[a]", now: now, nowMilliseconds: nowMs)
            return (try json(message.bytes) as? [String: Any])?["ttl"] as? Int
        }
        #expect(try ttl(expiresInMs: 853) == 0)
        #expect(try ttl(expiresInMs: 1_999) == 1)
        #expect(throws: PushPayloadError.expired) { try ttl(expiresInMs: 0) }
    }

    @Test func requestsHeadersBearerAndGzipOverOneKiB() throws {
        let small = try ExpoRequestBuilder.message(for: PushNotification(title: "t"), token: "ExponentPushToken[a]", now: now)
        let plain = ExpoRequestBuilder.sendRequest(messages: [small], settings: ExpoSettings(baseURL: "https://127.0.0.1:9443/"))
        #expect(plain.url == "https://127.0.0.1:9443/--/api/v2/push/send")
        #expect(plain.headers.map { "\($0.0): \($0.1)" } == ["accept: application/json", "accept-encoding: gzip", "content-type: application/json"])
        #expect(try json(plain.body) as? [[String: Any]] != nil)

        let messages = try (0..<20).map { i in
            try ExpoRequestBuilder.message(for: PushNotification(title: "Order \(i)", body: String(repeating: "b", count: 100)),
                                           token: "ExponentPushToken[\(i)]", now: now)
        }
        let big = ExpoRequestBuilder.sendRequest(messages: messages, settings: ExpoSettings(accessToken: "expo-secret"))
        #expect(big.url == "https://exp.host/--/api/v2/push/send")
        #expect(big.headers.contains { $0 == ("authorization", "Bearer expo-secret") })
        #expect(big.headers.contains { $0 == ("content-encoding", "gzip") })
        let body = try #require(gunzip(big.body))
        #expect(body.count > 1024 && big.body.count < body.count)
        #expect((try json(body) as? [[String: Any]])?.count == 20)

        let receipts = ExpoRequestBuilder.receiptsRequest(ids: ["r-1", "r-2"], settings: ExpoSettings())
        #expect(receipts.url == "https://exp.host/--/api/v2/push/getReceipts" && String(decoding: receipts.body, as: UTF8.self) == #"{"ids":["r-1","r-2"]}"#)
    }

    @Test func settingsFromTheEnvironment() throws {
        #expect(try ExpoSettings.load(environment: [:]) == nil)
        #expect(try ExpoSettings.load(environment: ["HERALD_EXPO_ENABLED": "0"]) == nil)
        #expect(try ExpoSettings.load(environment: ["HERALD_EXPO_ENABLED": "1"]) == ExpoSettings())
        // The documented spellings of a switch (docs/operations.md), in any case.
        #expect(try ExpoSettings.load(environment: ["HERALD_EXPO_ENABLED": "Yes"]) == ExpoSettings())
        #expect(try ExpoSettings.load(environment: ["HERALD_EXPO_ENABLED": "OFF"]) == nil)
        let s = try #require(try ExpoSettings.load(environment: ["HERALD_EXPO_ACCESS_TOKEN": " tok ", "HERALD_EXPO_BATCH_MS": "0"]))
        #expect(s.accessToken == "tok" && s.batchWindowMilliseconds == 0 && s.baseURL == "https://exp.host")
        #expect(try ExpoSettings.load(environment: ["HERALD_EXPO_URL": "http://127.0.0.1:1"])?.baseURL == "http://127.0.0.1:1")
        #expect(throws: PushCredentialError.self) { try ExpoSettings.load(environment: ["HERALD_EXPO_URL": "exp.host"]) }
        #expect(throws: PushCredentialError.invalidValue(variable: "HERALD_EXPO_ENABLED",
                                                         reason: "must be 1 or 0 (true/false, yes/no and on/off are read too), got 'maybe'")) {
            try ExpoSettings.load(environment: ["HERALD_EXPO_ENABLED": "maybe"])
        }
        #expect(throws: PushCredentialError.self) { try ExpoSettings.load(environment: ["HERALD_EXPO_ENABLED": "1", "HERALD_EXPO_BATCH_MS": "5000"]) }
        // api14: digits only, as every numeric setting (`Int` read `+5` as 5).
        for signed in ["+5", "-0", " +5"] {
            #expect(throws: PushCredentialError.invalidValue(variable: "HERALD_EXPO_BATCH_MS",
                                                             reason: "must be a whole number of ms in 0...1000, in digits only, got '\(signed.trimmingCharacters(in: .whitespaces))'")) {
                try ExpoSettings.load(environment: ["HERALD_EXPO_ENABLED": "1", "HERALD_EXPO_BATCH_MS": signed])
            }
        }
    }
}

@Suite struct ExpoClassificationTests {
    func tickets(_ items: String, status: Int = 200, headers: [(String, String)] = []) -> PushHTTPResponse {
        response(status, items, headers: headers)
    }

    @Test func ticketsClassifyOneByOne() {
        let answer = tickets(#"{"data":[{"status":"ok","id":"r-1"},{"status":"error","message":"not registered","details":{"error":"DeviceNotRegistered"}},{"status":"error","details":{"error":"MessageTooBig"}},{"status":"error","details":{"error":"MessageRateExceeded"}},{"status":"error","details":{"error":"InvalidCredentials"}},{"status":"error","details":{"error":"MismatchSenderId"}},{"status":"error","details":{"error":"SomethingNew"}}]}"#)
        let verdicts = classifyExpoSend(response: answer, count: 7, now: 0)
        #expect(verdicts[0].outcome == .delivered(providerMessageID: "r-1") && verdicts[0].receiptID == "r-1")
        #expect(verdicts[1].outcome == .deleteDevice(reason: "DeviceNotRegistered", providerTimestampMs: nil) && verdicts[1].providerMessage == "not registered")
        #expect(verdicts[2].outcome == .deadLetter(reason: "MessageTooBig") && !verdicts[2].isConfigurationError)
        #expect(verdicts[3].outcome == .retry(afterSeconds: nil, reason: "MessageRateExceeded"))
        #expect(verdicts[4].outcome == .deadLetter(reason: "InvalidCredentials") && verdicts[4].isConfigurationError)
        #expect(verdicts[5].outcome == .deadLetter(reason: "MismatchSenderId") && verdicts[5].isConfigurationError)
        #expect(verdicts[6].outcome == .retry(afterSeconds: nil, reason: "SomethingNew"))
        #expect(verdicts.dropFirst().allSatisfy { $0.receiptID == nil })
    }

    @Test func requestLevelAnswersApplyToEveryMessage() {
        let limited = classifyExpoSend(response: tickets(#"{"errors":[{"code":"TOO_MANY_REQUESTS","message":"slow down"}]}"#, status: 429, headers: [("retry-after", "7")]),
                                       count: 2, now: 0)
        #expect(limited.count == 2 && limited.allSatisfy { $0.outcome == .retry(afterSeconds: 7, reason: "TOO_MANY_REQUESTS") })
        #expect(classifyExpoSend(response: tickets("<html>", status: 502), count: 1, now: 0)[0].outcome == .retry(afterSeconds: nil, reason: "http_502"))
        let unauthorized = classifyExpoSend(response: tickets(#"{"errors":[{"code":"UNAUTHORIZED","message":"bad token"}]}"#, status: 401), count: 1, now: 0)[0]
        #expect(unauthorized.outcome == .deadLetter(reason: "UNAUTHORIZED") && unauthorized.isConfigurationError)
        let tooMany = classifyExpoSend(response: tickets(#"{"errors":[{"code":"PUSH_TOO_MANY_NOTIFICATIONS"}]}"#, status: 400), count: 1, now: 0)[0]
        #expect(tooMany.outcome == .deadLetter(reason: "PUSH_TOO_MANY_NOTIFICATIONS") && !tooMany.isConfigurationError)
        // A 200 that does not carry one ticket per message is not trusted.
        #expect(classifyExpoSend(response: tickets(#"{"data":[{"status":"ok","id":"r"}]}"#), count: 2, now: 0)
            .allSatisfy { $0.outcome == .retry(afterSeconds: nil, reason: "expo_unreadable_tickets") && $0.reconnect })
    }

    @Test func receipts() {
        let answer = classifyExpoReceipts(response: response(200, #"{"data":{"r-1":{"status":"ok"},"r-2":{"status":"error","message":"gone","details":{"error":"DeviceNotRegistered"}}}}"#), now: 0)
        guard case .receipts(let receipts) = answer else { Issue.record("\(answer)"); return }
        #expect(receipts.count == 2 && receipts["r-1"]?.outcome == .delivered(providerMessageID: nil) && receipts["r-1"]?.receiptID == nil)
        #expect(receipts["r-2"]?.outcome == .deleteDevice(reason: "DeviceNotRegistered", providerTimestampMs: nil))
        #expect(classifyExpoReceipts(response: response(503, ""), now: 0) == .failed(.applying(.retry(minimumDelay: nil), reason: "http_503", status: 503, retryAfter: nil)))
        if case .failed(let failure) = classifyExpoReceipts(response: response(200, "[]"), now: 0) {
            #expect(failure.outcome == .retry(afterSeconds: nil, reason: "expo_unreadable_receipts"))
        } else {
            Issue.record("an unreadable receipts answer must fail")
        }
    }
}

@Suite struct ExpoProviderTests {
    /// Answers every send with one `ok` ticket per message (`r-<request>-<index>`).
    final class Sizes: Sendable {
        let list = Mutex<[Int]>([])
    }

    static func ticketing(sizes: Sizes? = nil) -> ScriptedTransport {
        let requests = Mutex(0)
        return ScriptedTransport([response(500, "")]) { request in
            guard request.url.hasSuffix("/push/send"), let list = try? json(plainBody(request)) as? [Any] else { return nil }
            sizes?.list.withLock { $0.append(list.count) }
            let n = requests.withLock { $0 += 1; return $0 }
            let tickets = (0..<list.count).map { #"{"status":"ok","id":"r-\#(n)-\#($0)"}"# }.joined(separator: ",")
            return response(200, #"{"data":[\#(tickets)]}"#)
        }
    }

    /// Sends `count` pushes and waits for every completion.
    static func sendAll(_ provider: ExpoProvider, count: Int) async -> [PushClassification] {
        await withTaskGroup(of: (Int, PushClassification).self) { group in
            for i in 0..<count {
                group.addTask {
                    await withCheckedContinuation { continuation in
                        provider.send(PushNotification(title: "n\(i)"), to: PushTarget(provider: .expo, token: "ExponentPushToken[\(i)]", environment: nil),
                                      pushID: .random()) { continuation.resume(returning: (i, $0)) }
                    }
                }
            }
            var results = [PushClassification?](repeating: nil, count: count)
            for await (i, verdict) in group { results[i] = verdict }
            return results.compactMap { $0 }
        }
    }

    @Test func sendsDueTogetherShareRequestsOfAtMostAHundred() async throws {
        let sizes = Sizes()
        let provider = ExpoProvider(settings: ExpoSettings(batchWindowMilliseconds: 200), transport: Self.ticketing(sizes: sizes))
        let verdicts = await Self.sendAll(provider, count: 150)
        #expect(verdicts.count == 150)
        // Every send has its own ticket, and the tickets are the ones its request answered.
        #expect(Set(verdicts.compactMap(\.receiptID)).count == 150)
        // The hundredth send goes at once; the other fifty wait for the window.
        #expect(sizes.list.withLock { $0 } == [100, 50])
    }

    @Test func oneTicketPerMessageInRequestOrder() async throws {
        let transport = ScriptedTransport([response(200, #"{"data":[{"status":"ok","id":"r-a"},{"status":"error","details":{"error":"DeviceNotRegistered"}}]}"#)])
        let provider = ExpoProvider(settings: ExpoSettings(batchWindowMilliseconds: 1000), transport: transport)
        let tokens = ["ExponentPushToken[ok]", "ExponentPushToken[gone]"]
        let verdicts = Mutex<[String: PushClassification]>([:])
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let left = Mutex(2)
            for token in tokens {
                provider.send(PushNotification(title: "t"), to: PushTarget(provider: .expo, token: token, environment: nil), pushID: .random()) { verdict in
                    verdicts.withLock { $0[token] = verdict }
                    if left.withLock({ $0 -= 1; return $0 == 0 }) { done.resume() }
                }
            }
        }
        let sent = try #require(try json(plainBody(transport.requests[0])) as? [[String: Any]])
        let order = sent.compactMap { $0["to"] as? String }
        let byToken = verdicts.withLock { $0 }
        #expect(byToken[order[0]]?.receiptID == "r-a")
        #expect(byToken[order[1]]?.outcome == .deleteDevice(reason: "DeviceNotRegistered", providerTimestampMs: nil))
    }

    /// Expo's rule that one request's tokens belong to one project: a token `ExponentPushToken[<p>-…]`
    /// belongs to project `@merchant/<p>`; a request mixing projects is refused as Expo refuses it,
    /// naming each project's tokens, unless `details` is false. Records each request's tokens.
    final class Sent: Sendable {
        let requests = Mutex<[[String]]>([])
    }

    static func projectChecking(sent: Sent, details: Bool = true) -> ScriptedTransport {
        ScriptedTransport([response(500, "")]) { request in
            guard request.url.hasSuffix("/push/send"), let list = try? json(plainBody(request)) as? [[String: Any]] else { return nil }
            let tokens = list.compactMap { $0["to"] as? String }
            let n = sent.requests.withLock { $0.append(tokens); return $0.count }
            let projects = Dictionary(grouping: tokens) { "@merchant/" + $0.dropFirst("ExponentPushToken[".count).prefix { $0 != "-" } }
            guard projects.count == 1 else {
                let named = details ? #","details":"# + String(decoding: try! JSONSerialization.data(withJSONObject: projects), as: UTF8.self) : ""
                return response(400, #"{"errors":[{"code":"PUSH_TOO_MANY_EXPERIENCE_IDS","message":"All push notification messages in the same request must be for the same project"\#(named)}]}"#)
            }
            let tickets = tokens.indices.map { #"{"status":"ok","id":"r-\#(n)-\#($0)"}"# }.joined(separator: ",")
            return response(200, #"{"data":[\#(tickets)]}"#)
        }
    }

    /// Sends one push to each token in one batch and waits for every verdict, by token.
    static func sendBatch(_ provider: ExpoProvider, tokens: [String]) async -> [String: PushClassification] {
        let verdicts = Mutex<[String: PushClassification]>([:])
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let left = Mutex(tokens.count)
            for token in tokens {
                provider.send(PushNotification(title: "Order #77"), to: PushTarget(provider: .expo, token: token, environment: nil), pushID: .random()) { verdict in
                    verdicts.withLock { $0[token] = verdict }
                    if left.withLock({ $0 -= 1; return $0 == 0 }) { done.resume() }
                }
            }
        }
        return verdicts.withLock { $0 }
    }

    @Test func aBatchMixingExpoProjectsIsSentAgainOneRequestPerProject() async throws {
        let recorded = Sent()
        let provider = ExpoProvider(settings: ExpoSettings(batchWindowMilliseconds: 1000), transport: Self.projectChecking(sent: recorded))
        let tokens = ["ExponentPushToken[shop-1]", "ExponentPushToken[dev-1]", "ExponentPushToken[shop-2]", "ExponentPushToken[shop-3]"]
        let verdicts = await Self.sendBatch(provider, tokens: tokens)
        // One device of another project costs its batch a second round trip, not its pushes.
        #expect(verdicts.count == 4 && verdicts.values.allSatisfy { $0.receiptID != nil && $0.outcome == PushOutcome.delivered(providerMessageID: $0.receiptID) })
        let sent = recorded.requests.withLock { $0 }
        #expect(sent.count == 3 && Set(sent[0]) == Set(tokens))
        #expect(Set(sent.dropFirst().map(Set.init)) == [["ExponentPushToken[shop-1]", "ExponentPushToken[shop-2]", "ExponentPushToken[shop-3]"], ["ExponentPushToken[dev-1]"]])
    }

    @Test func aMixedProjectsRefusalWithoutDetailsOrRefusedAgainIsNotSentForEver() async throws {
        // Without `details` nothing says how to split: the refusal stands, one request.
        let recorded = Sent()
        let blind = ExpoProvider(settings: ExpoSettings(batchWindowMilliseconds: 1000), transport: Self.projectChecking(sent: recorded, details: false))
        let verdicts = await Self.sendBatch(blind, tokens: ["ExponentPushToken[a-1]", "ExponentPushToken[b-1]"])
        #expect(verdicts.values.allSatisfy { $0.outcome == PushOutcome.deadLetter(reason: "PUSH_TOO_MANY_EXPERIENCE_IDS") })
        #expect(recorded.requests.withLock { $0.count } == 1)
        // A regrouped request refused again is classified, not split again.
        let stubborn = ScriptedTransport([response(400, #"{"errors":[{"code":"PUSH_TOO_MANY_EXPERIENCE_IDS","details":{"@m/a":["ExponentPushToken[a-1]"],"@m/b":["ExponentPushToken[b-1]"]}}]}"#)])
        let again = ExpoProvider(settings: ExpoSettings(batchWindowMilliseconds: 1000), transport: stubborn)
        let second = await Self.sendBatch(again, tokens: ["ExponentPushToken[a-1]", "ExponentPushToken[b-1]"])
        #expect(second.values.allSatisfy { $0.outcome == PushOutcome.deadLetter(reason: "PUSH_TOO_MANY_EXPERIENCE_IDS") })
        #expect(stubborn.requests.count == 3)
    }

    @Test func aPayloadTooBigIsNeverSent() async {
        let transport = Self.ticketing()
        let provider = ExpoProvider(settings: ExpoSettings(batchWindowMilliseconds: 0), transport: transport)
        let verdict = await withCheckedContinuation { continuation in
            provider.send(PushNotification(title: "t", data: ["k": String(repeating: "v", count: 5000)]),
                          to: PushTarget(provider: .expo, token: "ExponentPushToken[a]", environment: nil), pushID: .random()) {
                continuation.resume(returning: $0)
            }
        }
        #expect(verdict.outcome == .deadLetter(reason: "payload_too_large"))
        #expect(transport.requests.isEmpty)
    }

    @Test func receiptsAreAskedForInOneRequest() async {
        let transport = ScriptedTransport([response(200, #"{"data":{"r-1":{"status":"ok"}}}"#)])
        let provider = ExpoProvider(settings: ExpoSettings(accessToken: "t"), transport: transport)
        let answer = await withCheckedContinuation { continuation in provider.checkReceipts(["r-1", "r-2"]) { continuation.resume(returning: $0) } }
        #expect(answer == .receipts(["r-1": PushClassification(outcome: .delivered(providerMessageID: nil), status: 200, rule: nil)]))
        #expect(transport.requests.count == 1 && transport.requests[0].headers.contains { $0 == ("authorization", "Bearer t") })
        #expect(ExpoProvider.id == .expo && provider.maximumReceiptsPerRequest == 300)
        #expect((try? ExpoProvider.validate(token: "ExpoPushToken[x]")) == "ExpoPushToken[x]")
    }
}
