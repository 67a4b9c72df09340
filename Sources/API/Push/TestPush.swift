import HeraldCore

/// The push `POST /v1/me/devices/{id}/test` and `herald send-test` send (DV-7, seed 000).
///
/// It reads like any other push of the app: the kind goes under the catalog's kind key
/// (`kind: "test"` for seed 000, `type: "test"` for an app whose `kind_key` is `type`), so an app
/// that routes taps by kind opens its home screen for it, as seed 000's table says. The texts,
/// sound, priority and grouping are the catalog's `test` kind when it has one; without such a kind,
/// or when it has neither a title nor a body, Herald's own "notifications are working" texts
/// (`TestPushText`). Either is chosen in the order every push's texts are (NO-5): the device's
/// language (its tag, then the same language in the same script), then the user's, then the
/// catalog's default language; Herald's texts last fall back to English.
public enum TestPush {
    /// - Parameters:
    ///   - catalog: the app's kind catalog (`NotificationCatalog.empty` when it has none).
    ///   - deviceLocale: the device's BCP 47 language tag; nil when unknown.
    ///   - userLocale: the user's profile language, for texts the device's language lacks; nil
    ///     when unknown.
    /// - Returns: an alert push with `data` `{kindKey: "test"}`, priority high unless the kind says otherwise.
    public static func notification(catalog: NotificationCatalog, deviceLocale: String?, userLocale: String? = nil) -> PushNotification {
        let builtIn = TestPushText.text(locales: [deviceLocale, userLocale, catalog.defaultLocale])
        var notification = PushNotification(title: builtIn.0, body: builtIn.1, data: [catalog.kindKey: NotificationCatalog.testKind],
                                            priority: .high)
        guard let kind = catalog.kind(NotificationCatalog.testKind) else { return notification }
        // The parser refused a `test` kind whose texts or grouping need arguments, so this renders.
        guard let rendered = try? NotificationRenderer(catalog: catalog).render(
            kind: kind.name, deviceLocale: deviceLocale, userLocale: userLocale, title: nil, body: nil, arguments: [:], data: [:],
            collapseKey: nil, threadID: nil, sound: nil, androidChannelID: nil) else { return notification }
        if kind.title != nil || kind.body != nil {
            // Both texts from the catalog when it has either, so a title and body never mix sources.
            notification.title = rendered.title
            notification.body = rendered.body
        }
        notification.subtitle = rendered.subtitle
        notification.sound = rendered.sound
        notification.collapseKey = rendered.collapseKey
        notification.tag = rendered.tag
        notification.threadID = rendered.threadID
        notification.androidChannelID = rendered.androidChannelID
        if let priority = kind.priority.flatMap(PushNotification.Priority.init(rawValue:)) { notification.priority = priority }
        return notification
    }
}
