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
    /// - Parameter deviceLocale: the device's language tag (`DeviceRecord.locale`).
    func pushNotification(_ plan: NotificationPlan, profile: AppProfile, texts: Texts, record: NotificationRecord, deviceLocale: String?,
                          userLocale: String? = nil,
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
        let rendered = try profile.renderer.render(kind: plan.kind, deviceLocale: deviceLocale, userLocale: userLocale,
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

    /// A call's pushes made before its planning unit, when every device of a recipient gets the
    /// same one: what the unit would make for each device, made here off the serial writer
    /// (issue 17: rendering and the job's stored text were ~20k instructions a push on it).
    struct PreparedPushes {
        /// The call's own title and body, parsed.
        let texts: Texts
        /// By stored record, in `call.stored`'s order: its push with its stored text made
        /// (`PushNotification.prepareStoredText()`); nil where rendering failed (the unit
        /// records the failure).
        let pushes: [PushNotification?]
    }

    /// The pushes of `call` for every device, when they do not depend on the device nor on what
    /// the planning unit reads: the texts are one for every locale (`rendersAlikeInEveryLocale`),
    /// the badge is not the unread count and no push carries a delivery id (drawn per push).
    /// nil otherwise, or when the call's texts do not parse (the unit records why).
    /// - Parameters:
    ///   - profile: the profile the planning unit uses for the call (the same object).
    ///   - events: the message that carried each of `call.stored` live (nil: none), in its order.
    ///   - now: the time the unit would pass (unused by rendering today; kept in step with it).
    func preparePushes(_ call: Planning, profile: AppProfile, events: [ChannelMessage?], now: Int64) -> PreparedPushes? {
        let plan = call.plan
        guard plan.badge != .unread, !plan.trackOpens else { return nil }
        let texts: Texts
        do {
            texts = Texts(title: try plan.title.map(NotificationPlan.localized), body: try plan.body.map(NotificationPlan.localized))
        } catch {
            return nil
        }
        guard profile.renderer.rendersAlikeInEveryLocale(kind: plan.kind, title: texts.title, body: texts.body) else { return nil }
        var pushes: [PushNotification?] = []
        pushes.reserveCapacity(call.stored.count)
        for (record, event) in zip(call.stored, events) {
            // The device's and the user's languages are not looked at (checked above): nil for both.
            var push = try? pushNotification(plan, profile: profile, texts: texts, record: record, deviceLocale: nil, userLocale: nil,
                                             eventID: event?.cursor.description, unread: nil, deliveryID: nil, now: now)
            push?.prepareStoredText()
            pushes.append(push)
        }
        return PreparedPushes(texts: texts, pushes: pushes)
    }
}
