import Foundation
@testable import HeraldCore
import RealtimeMemory
import StorageSQLite
import Testing

/// Two apps at the choke point (AP-1, AP-3, AP-4, ADR 0006): each call is planned with its app's
/// profile, devices, members and channel; equal user ids in two apps are two users; a plan that
/// recovery takes up keeps its app.
@Suite struct NotifierAppTests {
    static let chat = AppProfile(app: "chat", catalog: .empty, payload: try! PayloadOptions(rootKey: "respondo"))

    /// The notifier's harness with app `chat` beside `default`, both with a provider.
    final class TwoApps: Sendable {
        let h: NotifierTests.Harness
        var clock: ManualClock { h.clock }
        var storage: SQLiteStorage { h.storage }
        var broker: MemoryBroker { h.broker }
        var presence: MemoryPresenceStore { h.presence }
        var loops: NotifierTests.Loops { h.loops }
        var notifier: Notifier { h.notifier }

        init() throws {
            h = try NotifierTests.Harness(profiles: { $0 == "chat" ? NotifierAppTests.chat : nil }, appsWithProviders: ["chat"])
        }

        func device(app: String, user: String, session: String) throws {
            let now = clock.unixMilliseconds
            var registration = DeviceRegistration(userID: user, sessionID: session, platform: "ios", provider: "apns", token: "ab\(app.count)\(session.count)")
            registration.app = app
            let registered = registration
            _ = try storage.writeSync { tx in
                try tx.devices.register(registered, sessionExpiresAt: nil, newID: "dev_\(app)_\(user)", now: now)
            }
        }

        func call(app: String, users: [String], key: String? = nil) -> NotificationCall {
            let plan = NotificationPlan(kind: "k", scope: nil, title: ["*": "T"], body: nil, arguments: [:], data: ["x": "1"],
                                        collapseKey: nil, threadID: nil, sound: nil, androidChannelID: nil, priority: "normal",
                                        expiresAt: nil, badge: nil, persist: true, policy: .auto, ackWindowMilliseconds: 3_000,
                                        type: .alert, audience: "everyone", trackOpens: false, idempotencyKey: key)
            return NotificationCall(app: app, recipients: .users(users), plan: plan, live: nil, idempotencyKey: key, requestHash: "h-\(app)",
                                    planJSON: plan.jsonText(), titleJSON: JSONText.object(["*": "T"]), bodyJSON: nil, argsJSON: nil,
                                    dataJSON: "{}")
        }

        func send(_ call: NotificationCall) async -> NotificationAnswer { await h.send(call) }

        /// The queued push of each device id, of both apps; each job is its device's app's
        /// (ids `dev_<app>_<user>`).
        func pushes() throws -> [String: PushNotification] {
            var byDevice: [String: PushNotification] = [:]
            for app in ["default", "chat"] {
                for job in try storage.readSync({ try $0.jobs.list(app: app, state: .queued, limit: 100, beforeID: nil) }) {
                    let payload = try DeliveryJobPayload.decode(job.payloadJSON)
                    #expect(payload.deviceID.hasPrefix("dev_\(app)_"), "job \(job.id) of app \(app) is for \(payload.deviceID)")
                    byDevice[payload.deviceID] = payload.notification
                }
            }
            return byDevice
        }
    }

    @Test func aCallReachesItsAppsUserOnlyWithItsAppsPayloadAndChannel() async throws {
        let t = try TwoApps()
        try t.device(app: "chat", user: "carol", session: "s1")
        try t.device(app: "default", user: "carol", session: "d1")
        // The default app's carol is live in the foreground: that must not suppress chat's carol.
        t.presence.connected(connectionID: "c-default", userID: "carol", sessionID: "d1", transport: .sse, state: .foreground, channels: [])
        t.loops.reachable.withLock { $0["carol"] = ["c-default"] }
        let chatChannel = ChannelName.scoped(ChannelName.personal(userID: "carol")!, app: "chat")
        _ = try t.broker.subscribe([chatChannel], resume: .fresh)
        let answer = await t.send(t.call(app: "chat", users: ["carol"]))
        guard case .created(let json) = answer else { Issue.record("not created: \(answer)"); return }
        let body = try NotifierTests.object(json)
        #expect(body["push_queued"] as? Int == 1 && body["push_suppressed"] as? Int == 0, "\(body)")
        let pushes = try t.pushes()
        #expect(Set(pushes.keys) == ["dev_chat_carol"])
        #expect(pushes["dev_chat_carol"]?.rootKey == "respondo")
        let rows = try t.storage.readSync { tx in
            (try tx.notifications.unreadCount(app: "chat", userID: "carol"), try tx.notifications.unreadCount(app: "default", userID: "carol"))
        }
        #expect(rows == (1, 0))
        // The event went on chat's user:carol, not the default app's.
        let history = try t.broker.history(chatChannel, after: StreamCursor(epoch: t.broker.epoch, sequence: 0))
        #expect(history.messages.count == 1)
    }

    /// ADR 0019: a session is named by its app and sid. The default app's carol is live in the
    /// foreground in session 17; chat's carol has a device in chat's session 17. The default
    /// app's push is suppressed (its own session), chat's is not.
    @Test func aForegroundSessionOfOneAppNeverSuppressesAnotherAppsDeviceOfTheSameSid() async throws {
        let t = try TwoApps()
        try t.device(app: "chat", user: "carol", session: "17")
        try t.device(app: "default", user: "carol", session: "17")
        t.h.connect("c-default", user: "carol", session: "17", state: .foreground)
        let mine = try t.h.created(await t.send(t.call(app: "default", users: ["carol"])))
        #expect(mine["push_suppressed"] as? Int == 1 && mine["push_queued"] as? Int == 0, "\(mine)")
        let theirs = try t.h.created(await t.send(t.call(app: "chat", users: ["carol"])))
        #expect(theirs["push_suppressed"] as? Int == 0 && theirs["push_queued"] as? Int == 1, "\(theirs)")
        #expect(Set(try t.pushes().keys) == ["dev_chat_carol"])
    }

    @Test func oneIdempotencyKeyInTwoAppsIsTwoCalls() async throws {
        let t = try TwoApps()
        let first = await t.send(t.call(app: "chat", users: ["carol"], key: "k1"))
        let second = await t.send(t.call(app: "default", users: ["carol"], key: "k1"))
        let again = await t.send(t.call(app: "chat", users: ["carol"], key: "k1"))
        guard case .created = first, case .created = second, case .replayed = again else {
            Issue.record("\(first) \(second) \(again)")
            return
        }
    }

    @Test func recoveryPlansAnAbandonedCallWithItsApp() async throws {
        let t = try TwoApps()
        try t.device(app: "chat", user: "carol", session: "s1")
        try t.device(app: "default", user: "carol", session: "d1")
        let call = t.call(app: "chat", users: ["carol"])
        let now = t.clock.unixMilliseconds
        try t.storage.writeSync { tx in
            let plan = try tx.plans.insert(PendingPlan(planJSON: call.planJSON, createdAt: now))
            _ = try tx.notifications.insert(NotificationRecord(id: "ntf_chat", app: "chat", userID: "carol", kind: "k",
                                                               titleJSON: call.titleJSON, planID: plan, createdAt: now))
        }
        t.notifier.runRecovery()
        let pushes = try t.pushes()
        #expect(Set(pushes.keys) == ["dev_chat_carol"])
        #expect(pushes["dev_chat_carol"]?.rootKey == "respondo")
    }
}
