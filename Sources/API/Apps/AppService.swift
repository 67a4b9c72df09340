import Foundation
import HeraldCore
import PushHTTP
import Realtime
import Synchronization

/// The apps' life cycle (AP-1, AP-2, ADR 0006): opening sealed secrets, checking settings,
/// building providers, and installing an app's new state in the `AppDirectory` and the
/// `PushProviders` after its change is committed.
public final class AppService: Sendable {
    let storage: any Storage
    let directory: AppDirectory
    let secretBox: SecretBox?
    let factory: (any AppPushFactory)?
    let providers: PushProviders?
    let leewaySeconds: Int64
    /// Closes the live streams of a deleted app's users and forgets its channels (set by the
    /// executable: the node knows them).
    let closeStreams: @Sendable (AppID) -> Void
    /// Ends an app's open streams whose tokens its changed token settings may no longer accept.
    let revokeStreams: @Sendable (AppID) -> Void
    /// Forgets a deleted app's provider health and mass-deletion guard (`DeliveryWorker.forgetApp`).
    let forgetPushState: @Sendable (AppID) -> Void
    /// Stored apps this process could not load, and why (`/readyz`): their keys and tokens are
    /// refused and their pushes wait, until they load.
    private let failed = Mutex<[AppID: String]>([:])

    /// - Parameters:
    ///   - secretBox: seals and opens secrets; nil when `HERALD_SECRET_KEY` is not set (secrets
    ///     cannot be set then).
    ///   - factory: builds providers; nil: this build sends no push for stored apps.
    ///   - providers: where an app's providers are installed.
    public init(storage: any Storage, directory: AppDirectory, secretBox: SecretBox?, factory: (any AppPushFactory)?,
                providers: PushProviders?, leewaySeconds: Int64 = 60, closeStreams: @escaping @Sendable (AppID) -> Void = { _ in },
                revokeStreams: @escaping @Sendable (AppID) -> Void = { _ in },
                forgetPushState: @escaping @Sendable (AppID) -> Void = { _ in }) {
        self.storage = storage
        self.directory = directory
        self.secretBox = secretBox
        self.factory = factory
        self.providers = providers
        self.leewaySeconds = leewaySeconds
        self.closeStreams = closeStreams
        self.revokeStreams = revokeStreams
        self.forgetPushState = forgetPushState
    }

    /// What an app becomes once committed.
    struct Prepared: Sendable {
        let record: AppRecord
        let resolved: ResolvedApp
        /// nil: the push credentials did not change, and the installed providers stay.
        let providers: [any PushProvider]?
    }

    /// Opens every secret of `record` (its context binds app and field).
    /// - Throws: `SecretBoxError`; `.badKey` when secrets exist and no key is configured.
    func openSecrets(_ record: AppRecord) throws(SecretBoxError) -> [AppSecretField: [UInt8]] {
        guard !record.secrets.isEmpty else { return [:] }
        guard let secretBox else { throw .badKey("HERALD_SECRET_KEY is not set, and app \(record.id) has sealed secrets") }
        var opened: [AppSecretField: [UInt8]] = [:]
        for (field, sealed) in record.secrets {
            opened[field] = try secretBox.open(sealed.sealed, context: Self.context(record.id, field))
        }
        return opened
    }

    /// The additional data a secret is bound to.
    static func context(_ app: AppID, _ field: AppSecretField) -> String { "\(app.rawValue)/\(field.rawValue)" }

    /// Checks `record` and builds what it needs, without installing anything. Providers are built
    /// only when the app's push credentials differ from those installed.
    /// - Throws: `AppSettingError` (400 naming the field).
    func prepare(_ record: AppRecord, opened: [AppSecretField: [UInt8]]) throws(AppSettingError) -> Prepared {
        var resolved = try ResolvedApp(record: record, jwtSecret: opened[.jwtSecret], leewaySeconds: leewaySeconds)
        resolved.webPushPublicKey = factory?.webPushPublicKey(push: record.settings.push, secrets: opened)
        if let installed = directory.app(record.id), installed.pushIdentity == resolved.pushIdentity {
            return Prepared(record: record, resolved: resolved, providers: nil)
        }
        var pushSecrets = opened
        pushSecrets[.jwtSecret] = nil
        let built = try factory?.providers(app: record.id, push: record.settings.push, secrets: pushSecrets) ?? []
        return Prepared(record: record, resolved: resolved, providers: built)
    }

    /// Makes a committed app effective: verifiers, server keys, providers (no restart).
    /// - Parameter announced: how telling the other nodes went (`AppDirectory.install`).
    func install(_ prepared: Prepared, notify: Bool = true, announced: @escaping @Sendable (AppPropagation) -> Void = { _ in }) {
        failed.withLock { $0[prepared.record.id] = nil }
        if let built = prepared.providers { providers?.setProviders(built, app: prepared.record.id.rawValue) }
        let before = directory.app(prepared.record.id)
        let answer = LocalStepsFirst(announced)
        directory.install(prepared.resolved, notify: notify, announced: answer.propagated)
        // A stream outlives the check of its token: one opened with a secret this change retires
        // (a leaked one) would otherwise go on until an `exp` its holder chose. Every node ends
        // them when it installs the change (the control bus's reload on the others).
        if let before, before.tokensDiffer(from: prepared.resolved) { revokeStreams(prepared.record.id) }
        answer.localStepsDone()
    }

    /// Forgets a deleted app and closes its streams.
    /// - Parameter announced: how telling the other nodes went (`AppDirectory.remove`).
    func uninstall(_ id: AppID, notify: Bool = true, announced: @escaping @Sendable (AppPropagation) -> Void = { _ in }) {
        failed.withLock { $0[id] = nil }
        let answer = LocalStepsFirst(announced)
        directory.remove(id, notify: notify, announced: answer.propagated)
        providers?.removeApp(id.rawValue)
        factory?.release(app: id)
        forgetPushState(id)
        closeStreams(id)
        answer.localStepsDone()
    }

    /// Makes this node serve app `id` as the database now holds it, after another node changed or
    /// deleted it (the control bus, ADR 0006): installed again when stored, uninstalled (its streams
    /// here closed) when gone. Does not call the directory's change hook, so nothing echoes back.
    /// Blocks on one storage read: call it off the event loops.
    /// - Throws: a `StorageError` when the app cannot be read (the node keeps what it had);
    ///   `SecretBoxError` or `AppSettingError` when the stored app does not open or check here (then
    ///   listed in `notLoaded`, the node keeping what it had).
    public func reload(_ id: AppID) throws {
        guard !id.isDefault else { return }
        let record = try storage.readSync { tx in try tx.apps.find(id) }
        guard let record else {
            failed.withLock { $0[id] = nil }
            if directory.app(id) != nil { uninstall(id, notify: false) }
            return
        }
        do {
            install(try prepare(record, opened: try openSecrets(record)), notify: false)
        } catch {
            // Listed as at start (`/readyz`, `GET /v1/apps`): the log line alone left this node
            // looking as if it served the change.
            if let reason = Self.notLoadedReason(error) { failed.withLock { $0[id] = reason } }
            throw error
        }
    }

    /// Why a stored app is not served, as `notLoaded` lists it; nil for an error that is not the app's.
    static func notLoadedReason(_ error: any Error) -> String? {
        switch error {
        case is SecretBoxError: "secrets_unreadable"
        case let error as AppSettingError: "setting_unusable: \(error.field)"
        default: nil
        }
    }

    /// The ids of every stored app (one storage read; call it off the event loops).
    /// - Throws: a `StorageError` when the apps cannot be read.
    public func storedIDs() throws -> [AppID] {
        try storage.readSync { tx in try tx.apps.list() }.map(\.id)
    }

    /// Stored apps not loaded here, by id, with why (`secrets_unreadable`, `setting_unusable: FIELD`).
    public var notLoaded: [AppID: String] { failed.withLock { $0 } }

    /// Loads every stored app at start. An app whose secrets do not open or whose settings no
    /// longer check is skipped with an error in the log (Herald still starts, PU-6's rule);
    /// secrets sealed under a previous key are sealed again under the current one.
    /// - Returns: the ids of the apps installed.
    @discardableResult
    public func loadAll(log: (String, [String: String]) -> Void = { _, _ in }) throws -> [AppID] {
        let records = try storage.readSync { tx in try tx.apps.list() }
        var installed: [AppID] = []
        for var record in records {
            do {
                let opened = try openSecrets(record)
                let prepared = try prepare(record, opened: opened)
                if let secretBox, record.secrets.values.contains(where: { secretBox.needsReseal($0.sealed) }) {
                    for (field, plain) in opened {
                        record.secrets[field]?.sealed = try secretBox.seal(plain, context: Self.context(record.id, field))
                    }
                    let resealed = record
                    _ = try storage.writeSync { tx in try tx.apps.update(resealed) }
                    log("app secrets sealed again under the current HERALD_SECRET_KEY", ["app": record.id.rawValue, "key_id": secretBox.keyID])
                }
                if prepared.resolved.serverKeyHashes.contains(where: { directory.serverKeyTaken($0, except: record.id) }) {
                    log("a server key of the app is another app's (HERALD_SERVER_KEY?); it stays theirs, and this app must be given a new one",
                        ["app": record.id.rawValue])
                }
                install(prepared)
                installed.append(record.id)
            } catch let error as SecretBoxError {
                log("app not loaded: its secrets do not open", ["app": record.id.rawValue, "error": error.message])
                failed.withLock { $0[record.id] = Self.notLoadedReason(error) }
            } catch let error as AppSettingError {
                log("app not loaded: a setting is unusable", ["app": record.id.rawValue, "field": error.field, "error": error.message])
                failed.withLock { $0[record.id] = Self.notLoadedReason(error) }
            }
        }
        return installed
    }
}

/// Holds an admin change's answer until this node's own steps after the directory's are done.
///
/// The directory reports propagation at once when there is no other node to tell, from inside
/// `install`/`remove`: the `DELETE` or `PATCH` was then answered before this node had closed the
/// app's streams, dropped its providers or ended streams whose tokens the change retired, so a
/// client could still stream, and `/readyz` still show the deleted app, after the answer.
private final class LocalStepsFirst: Sendable {
    private let announced: @Sendable (AppPropagation) -> Void
    /// (local steps done, the propagation reported before they were).
    private let state = Mutex<(done: Bool, held: AppPropagation?)>((false, nil))

    init(_ announced: @escaping @Sendable (AppPropagation) -> Void) { self.announced = announced }

    /// The directory's report: passed on now if the local steps are done, else held until they are.
    var propagated: @Sendable (AppPropagation) -> Void {
        { [self] propagation in
            let now = state.withLock { state -> Bool in
                if state.done { return true }
                state.held = propagation
                return false
            }
            if now { announced(propagation) }
        }
    }

    /// The local steps are done: a report held meanwhile goes now.
    func localStepsDone() {
        if let held = state.withLock({ state -> AppPropagation? in
            state.done = true
            defer { state.held = nil }
            return state.held
        }) { announced(held) }
    }
}
