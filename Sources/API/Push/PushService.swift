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
    /// - Parameter locales: the languages to try, most wanted first (the device's, the user's,
    ///   the catalog's default; nil for one not known).
    /// - Returns: (title, body) in the first of them Herald has texts for; English when none.
    static func text(locales: [String?]) -> (String, String) {
        for locale in locales {
            if let locale, let found = known(locale) { return found }
        }
        return english
    }

    private static let english = ("Test notification", "Notifications are working on this device")

    /// The texts for `locale`'s language and script; nil for a language Herald has none in.
    private static func known(_ locale: String) -> (String, String)? {
        let subtags = locale.split(separator: "-").map { $0.lowercased() }
        guard let language = subtags.first else { return nil }
        // Traditional script: `zh-Hant…`, or the regions that write it when no script is given.
        if language == "zh", subtags.contains("hant") || (!subtags.contains("hans") && subtags.contains(where: { ["tw", "hk", "mo"].contains($0) })) {
            return ("測試通知", "此裝置上的通知功能正常")
        }
        switch language {
        case "pt": return ("Notificação de teste", "As notificações estão funcionando neste aparelho")
        case "es": return ("Notificación de prueba", "Las notificaciones funcionan en este dispositivo")
        case "zh": return ("测试通知", "此设备上的通知功能正常")
        case "en": return english
        default: return nil
        }
    }
}
