/// Who delivers to a device token: Apple (APNs), Google (FCM), a browser's push service (Web Push)
/// or Expo's push service (which relays to APNs/FCM with the app's credentials at Expo).
///
/// The raw value is what `devices.provider` stores and what the API and the job payload spell,
/// so it never changes; a provider added later (`expo`) is a new case. Device rows keep the string:
/// convert at the edge with `PushProviderID(rawValue:)`. Having an id does not mean Herald can
/// deliver to it: `PushProviders` knows which adapters this build has.
public enum PushProviderID: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    /// Apple Push Notification service (HTTP/2, token auth).
    case apns
    /// Firebase Cloud Messaging HTTP v1.
    case fcm
    /// Web Push (RFC 8030, RFC 8291 encryption, RFC 8292 VAPID): a browser's push subscription.
    case webpush
    /// Expo push service (`ExponentPushToken[…]`, PU-8a): tickets at send, receipts later.
    case expo

    public var description: String { rawValue }
}
