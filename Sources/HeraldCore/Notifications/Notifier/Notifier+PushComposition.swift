import Foundation
import Synchronization

/// Composes the push one device gets: texts in its locale, grouping, badge and ids.
extension Notifier {
    /// The call's own title and body, parsed.
    struct Texts {
        let title: LocalizedText?
        let body: LocalizedText?
    }

    /// The push for one device: texts in its locale, else the user's, else the default (NO-5), grouping (NO-7),
    /// badge, ids — all data under the app's root key when it has one (AP-4). It names the inbox
    /// notification, `record.id`, which a resend's providers use to replace it (ADR 0020).
    func pushNotification(_ plan: NotificationPlan, profile: AppProfile, texts: Texts, record: NotificationRecord, device: DeviceRecord, userLocale: String? = nil,
                          eventID: String?,
                          unread: Int?, deliveryID: String?, now: Int64) throws(CatalogError) -> PushNotification {
        let catalog = profile.catalog, payload = profile.payload
        var data = plan.data
        data[catalog.kindKey] = plan.kind
        if let key = catalog.notificationIDKey { data[key] = record.id }
        if let deliveryID { data["delivery_id"] = deliveryID }
        var ttlSeconds: Int?
        var expiresAt: Int?
        var expiresAtMilliseconds: Int?
        if plan.ttlSeconds == 0 {
            ttlSeconds = 0   // "now or never" keeps its meaning at the provider
        } else if let at = plan.expiresAt {
            expiresAt = Int((at + 999) / 1000)
            expiresAtMilliseconds = Int(at)
        }
        let badge: Int? = switch plan.badge {
        case .number(let n)?: n
        case .unread?: unread
        case nil: nil
        }
        let rendered = try profile.renderer.render(kind: plan.kind, deviceLocale: device.locale, userLocale: userLocale,
                                           title: texts.title, body: texts.body,
                                           arguments: plan.arguments, data: plan.data, collapseKey: plan.collapseKey, threadID: plan.threadID,
                                           sound: plan.sound, androidChannelID: plan.androidChannelID)
        let priority = PushNotification.Priority(rawValue: plan.priority) ?? .normal
        if plan.type == .wakeup {
            if let eventID { data["cursor"] = eventID }
            var wakeup = PushNotification.wakeup(data: data, collapseKey: rendered.collapseKey, ttlSeconds: ttlSeconds,
                                                 rootKey: payload.rootKey, notificationID: record.id)
            wakeup.expiresAt = expiresAt
            wakeup.expiresAtMilliseconds = expiresAtMilliseconds
            wakeup.badge = badge
            return wakeup
        }
        return PushNotification(kind: .alert, title: rendered.title, subtitle: rendered.subtitle, body: rendered.body, sound: rendered.sound,
                                badge: badge, threadID: rendered.threadID, collapseKey: rendered.collapseKey, data: data, priority: priority,
                                ttlSeconds: ttlSeconds, expiresAt: expiresAt, androidChannelID: rendered.androidChannelID, tag: rendered.tag,
                                rootKey: payload.rootKey, expiresAtMilliseconds: expiresAtMilliseconds, notificationID: record.id)
    }
}
