import HeraldCore

/// What the API needs of push delivery: send now (the test push), or enqueue durable jobs for the
/// worker. Absent when no provider has credentials (PU-6): routes then answer 503.
public struct PushService: Sendable {
    /// The configured providers; the API sends through them, never to an adapter directly.
    public let providers: PushProviders
    public let worker: DeliveryWorker

    public init(providers: PushProviders, worker: DeliveryWorker) {
        self.providers = providers
        self.worker = worker
    }

    /// Wakes the delivery worker: the notifier calls it after a planning transaction enqueued pushes.
    public var wakeWorker: @Sendable () -> Void { { [worker] in worker.wake() } }
}

/// "Notifications are working on this device" in the device's language (DV-7, NO-5): the test
/// push's texts when the catalog has no `test` kind (`TestPush`). Portuguese in seed 000's words.
enum TestPushText {
    /// - Returns: (title, body) for a BCP 47 `locale`; English when the language is not known.
    static func text(locale: String?) -> (String, String) {
        let subtags = locale?.split(separator: "-").map { $0.lowercased() } ?? []
        let language = subtags.first ?? "en"
        // Traditional script: `zh-Hant…`, or the regions that write it when no script is given.
        if language == "zh", subtags.contains("hant") || (!subtags.contains("hans") && subtags.contains(where: { ["tw", "hk", "mo"].contains($0) })) {
            return ("測試通知", "此裝置上的通知功能正常")
        }
        switch language {
        case "pt": return ("Notificação de teste", "As notificações estão funcionando neste aparelho")
        case "es": return ("Notificación de prueba", "Las notificaciones funcionan en este dispositivo")
        case "zh": return ("测试通知", "此设备上的通知功能正常")
        default: return ("Test notification", "Notifications are working on this device")
        }
    }
}
