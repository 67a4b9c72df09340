/// Whether each provider answers (`ProviderHealth`, OP-3): told of every request's end.
extension DeliveryWorker {
    /// Counts a request of the provider `key` (the guard's key: `apns`, `apns@chat`) as answered or
    /// not, and logs when the provider turns degraded or answers again. A push that never went
    /// (dropped at its send-by deadline, refused before sending) counts as neither.
    func noteHealth(provider key: String, _ classification: PushClassification) {
        let change: ProviderHealth.Change
        if classification.isUnanswered {
            let reason: String = switch classification.outcome {
            case .retry(_, let reason), .notSent(_, let reason): reason
            default: "\(classification.outcome)"
            }
            change = providerHealth.recordUnanswered(provider: key, reason: reason, atMilliseconds: clock.unixMilliseconds)
        } else if classification.status != nil {
            change = providerHealth.recordAnswer(provider: key)
        } else {
            return
        }
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
}
