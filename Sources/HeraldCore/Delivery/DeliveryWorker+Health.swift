import Synchronization

/// Whether each provider answers (`ProviderHealth`, OP-3): told of every request's end — the
/// worker's pushes, its receipt checks and the device test push (ADR 0015).
extension DeliveryWorker {
    /// The key a provider's health and its mass-deletion guard are kept under: the provider's
    /// name for the default app, `provider@app` for a stored app (`apns@chat`, ADR 0006).
    public static func healthKey(provider: String, app: String) -> String {
        app == "default" ? provider : "\(provider)@\(app)"
    }

    /// Counts one push sent outside the queue — the device test push (`POST
    /// /v1/me/devices/{id}/test`) — toward its provider's health, as the worker's own pushes are.
    ///
    /// - Parameters:
    ///   - provider: the device's provider; `app`: its app.
    ///   - classification: the push's verdict.
    public func noteHealth(provider: PushProviderID, app: String, _ classification: PushClassification) {
        noteHealth(provider: Self.healthKey(provider: provider.rawValue, app: app), classification)
    }

    /// Forgets the health and mass-deletion guard of a deleted app's providers (`apns@chat`…):
    /// without it, the pushes its deletion cut short (its connections closed under them) showed
    /// its providers degraded on `/readyz` and `/metrics` until a restart, with nothing left that
    /// could ever clear them, and a new app of its id started with them.
    /// - Parameter app: the deleted app's id (never `default`).
    public func forgetApp(_ app: String) {
        providerHealth.forgetApp(app)
        massDeletionGuard.forgetApp(app)
    }

    /// Whether a push of `app` through `provider` still speaks for a provider this node serves:
    /// false once the app was deleted (or its credentials for that provider removed), when its
    /// last pushes end at their closed connections, which says nothing about the provider.
    func countsTowardHealth(provider: String, app: String) -> Bool {
        app == "default" || providers.isConfigured(storedProvider: provider, app: app)
    }

    /// Counts a request of the provider `key` (the guard's key: `apns`, `apns@chat`) as answered or
    /// not, and logs when the provider turns degraded or answers again. A push that never went
    /// (dropped at its send-by deadline, refused before sending) counts as neither.
    func noteHealth(provider key: String, _ classification: PushClassification) {
        if classification.isUnanswered {
            let reason: String = switch classification.outcome {
            case .retry(_, let reason), .notSent(_, let reason), .busy(let reason): reason
            default: "\(classification.outcome)"
            }
            if classification.isCertificateRejection { logCertificateRejection(provider: key, reason: reason) }
            noteHealth(provider: key, providerHealth.recordUnanswered(provider: key, reason: reason, atMilliseconds: clock.unixMilliseconds))
        } else if classification.status != nil {
            noteHealth(provider: key, providerHealth.recordAnswer(provider: key))
        }
    }

    /// Counts a receipt check (`PushReceiptProvider.checkReceipts`) of the provider `key`: its
    /// receipts are an answer; a failed check counts as its classification says.
    func noteHealth(provider key: String, _ answer: PushReceiptAnswer) {
        switch answer {
        case .receipts: noteHealth(provider: key, providerHealth.recordAnswer(provider: key))
        case .failed(let classification): noteHealth(provider: key, classification)
        }
    }

    private func noteHealth(provider key: String, _ change: ProviderHealth.Change) {
        switch change {
        case .none: break
        case .degraded(let degradation):
            // Once per run: each push's own retry is logged with its job.
            log.error("the provider does not answer: its pushes are retried (/readyz shows it degraded)",
                      ["provider": key, "reason": degradation.reason, "requests": String(degradation.failures)])
        case .recovered(let degradation):
            log.info("the provider answers again", ["provider": key, "unanswered_requests": String(degradation.failures),
                                                    "unanswered_ms": String(clock.unixMilliseconds - degradation.sinceMilliseconds)])
        }
    }

    /// A refused certificate fails every request until an operator acts (ADR 0018): one error line
    /// per 30 s names the likely causes, with how many it held back.
    private func logCertificateRejection(provider key: String, reason: String) {
        guard let held = certificateRejectionLog.withLock({ $0.admit(now: clock.monotonicNanoseconds) }) else { return }
        var metadata = ["provider": key, "reason": reason]
        if held > 0 { metadata["repeated"] = String(held) }
        log.error("the provider's TLS certificate was refused: nothing is sent to it; its pushes are kept and retried "
                  + "(check HERALD_CA_FILE, a proxy that intercepts TLS, or who answers at that address)", metadata)
    }
}
