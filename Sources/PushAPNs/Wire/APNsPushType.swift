import HeraldCore
import PushHTTP

/// The `apns-push-type` header (push-providers.md §1.3). Apple: "Send an apns-push-type header
/// with each push"; watchOS requires it.
///
/// Herald sends `alert` and `background`; the other types exist so the topic-suffix and payload
/// limit rules are written down in one place. A struct over strings, so new types need no break.
public struct APNsPushType: Hashable, Sendable, CustomStringConvertible {
    /// The header value, e.g. `alert`.
    public let rawValue: String

    private init(_ rawValue: String) { self.rawValue = rawValue }

    /// Visible notification (alert, sound, badge). Topic: the bundle id.
    public static let alert = APNsPushType("alert")
    /// Silent `content-available` update; priority must be 5. Topic: the bundle id.
    public static let background = APNsPushType("background")
    /// VoIP (PushKit); topic `<bundle>.voip`; 5120-byte payload limit.
    public static let voip = APNsPushType("voip")
    /// watchOS complication; topic `<bundle>.complication`.
    public static let complication = APNsPushType("complication")
    /// File provider; topic `<bundle>.pushkit.fileprovider`.
    public static let fileProvider = APNsPushType("fileprovider")
    /// Live Activity; topic `<bundle>.push-type.liveactivity`.
    public static let liveActivity = APNsPushType("liveactivity")
    /// Location query; topic `<bundle>.location-query`.
    public static let location = APNsPushType("location")
    /// Push to talk; topic `<bundle>.voip-ptt`.
    public static let pushToTalk = APNsPushType("pushtotalk")
    /// Widgets; topic `<bundle>.push-type.widgets`.
    public static let widgets = APNsPushType("widgets")
    /// Controls; topic `<bundle>.push-type.controls`.
    public static let controls = APNsPushType("controls")

    /// Largest body APNs accepts for this type, in bytes: 5120 for VoIP, 4096 otherwise
    /// (push-providers.md §1.2). Larger bodies get `413 PayloadTooLarge`.
    public var maximumPayloadBytes: Int { self == .voip ? 5120 : 4096 }

    public var description: String { rawValue }
}
