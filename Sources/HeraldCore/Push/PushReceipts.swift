import Foundation

/// A provider that accepts a push first and says later whether it reached the device (Expo: a
/// ticket at send, a receipt about 15 minutes later, kept about 24 h; expo-webpush.md, PU-8a).
///
/// Its `send` reports acceptance as `delivered` with `PushClassification.receiptID` set; the
/// `DeliveryWorker` then stores a `push.receipt` job (`PushReceiptJobPayload`) due
/// `receiptDelayMilliseconds` later and, when it is due, asks `checkReceipts` about every receipt
/// claimed together (one request per provider, at most `maximumReceiptsPerRequest` ids).
///
/// # Thread safety
/// Like `PushProvider`: `checkReceipts` may be called from any thread, concurrently.
public protocol PushReceiptProvider: PushProvider {
    /// Most receipt ids one `checkReceipts` call takes (Expo allows 1000; its SDK asks for 300).
    var maximumReceiptsPerRequest: Int { get }

    /// Asks the provider about `ids` and classifies each receipt it knows.
    ///
    /// - Parameters:
    ///   - ids: receipt ids from `PushClassification.receiptID`, at most `maximumReceiptsPerRequest`.
    ///   - completion: called exactly once, from any thread.
    func checkReceipts(_ ids: [String], completion: @escaping @Sendable (PushReceiptAnswer) -> Void)
}

/// What a provider said about a set of receipts.
public enum PushReceiptAnswer: Sendable, Equatable {
    /// The receipts the provider knows, by id, each classified like a send's answer: `delivered`
    /// (the device's push service took it), `deleteDevice`, `retry` (the push was **not** delivered
    /// and must be sent again, e.g. Expo `MessageRateExceeded`), `deadLetter`. An id that is
    /// missing has no receipt yet: ask again later (until the provider's window closes).
    case receipts([String: PushClassification])
    /// The request itself failed (transport error, 429, 5xx, refused credentials): nothing was
    /// learnt about any id. The classification says whether to retry the check or give up.
    case failed(PushClassification)
}

/// The JSON stored in a `push.receipt` job: the receipt to ask about and the push it belongs to,
/// so that a receipt that says "not delivered, try again" can queue the same push again (same
/// push id, so the device shows it at most once, PU-5b).
///
/// ```
/// {"provider":"expo","receipt_id":"…","sent_at":<unix ms>,"delivery":{<DeliveryJobPayload>},
///  "app":"…","sent_device_id":"…"}
/// ```
/// A stored format: it only ever gains optional members.
public struct PushReceiptJobPayload: Codable, Sendable, Equatable {
    /// The job kind in the `jobs` table.
    public static let kind = "push.receipt"

    /// The provider that issued the receipt (`PushProviderID` raw value).
    public var provider: String
    /// The provider's receipt (Expo ticket) id.
    public var receiptID: String
    /// Unix ms of the send that got the receipt: the provider's window (24 h for Expo) starts
    /// here, and a device registered again after it is kept when the receipt rejects the token.
    public var sentAt: Int64
    /// The push, as its `push.deliver` job stored it (its `device_id` moved by a token rotation).
    public var delivery: DeliveryJobPayload
    /// The device's app when not `default` (ADR 0006): its receipts are asked with its own
    /// provider (its access token); absent in jobs of the default app and of older builds.
    public var app: String?
    /// The device the push went to, set when a token rotation moved the job to the device that
    /// replaced it (`delivery.device_id` then names that one, for a resend; ADR 0014): the
    /// receipt's verdict on the token (`DeviceNotRegistered`) is about this device, never the
    /// new one. Absent in jobs never moved: `delivery.device_id` is the device then.
    public var sentDeviceID: String?

    enum CodingKeys: String, CodingKey {
        case provider, receiptID = "receipt_id", sentAt = "sent_at", delivery, app, sentDeviceID = "sent_device_id"
    }

    public init(provider: PushProviderID, receiptID: String, sentAt: Int64, delivery: DeliveryJobPayload) {
        self.provider = provider.rawValue
        self.receiptID = receiptID
        self.sentAt = sentAt
        self.delivery = delivery
    }

    /// The JSON text for the `payload_json` column (keys sorted, stable).
    public func jsonText() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Strings, numbers and the delivery payload's plain values cannot fail to encode.
        return String(decoding: (try? encoder.encode(self)) ?? Data("{}".utf8), as: UTF8.self)
    }

    /// - Throws: `DecodingError` for a payload this version cannot read.
    public static func decode(_ text: String) throws -> PushReceiptJobPayload {
        try JSONDecoder().decode(PushReceiptJobPayload.self, from: Data(text.utf8))
    }
}
