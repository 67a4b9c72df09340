import CCurl
import HeraldCore

/// Why an HTTP/2 exchange with a push provider produced no response.
///
/// An HTTP answer of any status (including 4xx/5xx) is *not* an error: it arrives as a
/// `PushHTTPResponse`. These cases cover transport failures only, mapped from libcurl's
/// `CURLcode`; the `String` payloads carry libcurl's error-buffer text (or `curl_easy_strerror`).
public enum PushTransportError: Error, Sendable, Equatable {
    /// The connection could not be established: refused, unreachable, DNS failure, or reset/closed by
    /// the peer during the TLS handshake.
    case connect(String)
    /// The connect timeout or the whole-request timeout elapsed, or the request's send-by deadline
    /// (`PushHTTPRequest.sendWithinMilliseconds`) passed while it was on the wire.
    case timeout
    /// The request's send-by deadline (`PushHTTPRequest.sendWithinMilliseconds`) passed before it
    /// was sent: it was still waiting for a stream, so it never reached the server (native client).
    case sendByPassed
    /// The push's audience may have changed while the request waited for a stream
    /// (`PushHTTPRequest.sendWhileAudience`): not sent, so its device can be read again (native client).
    case audienceChanged
    /// TLS failed for a TLS reason other than the server's certificate: handshake or protocol
    /// negotiation (no common version or cipher, no ALPN `h2`), a CA file that cannot be read.
    /// Not transient: fix the configuration.
    case tls(String)
    /// The server's certificate did not verify: unknown CA (`HERALD_CA_FILE` missing, a
    /// TLS-intercepting proxy, an attack), name mismatch, expired (ADR 0018). The text is the
    /// verifier's. Nothing was sent: the handshake ended first. Not transient.
    case certificateRejected(String)
    /// The connection or stream broke after it was established: HTTP/2 framing error,
    /// RST_STREAM, GOAWAY refusing the stream, connection reset or closed mid-response,
    /// empty reply. Safe to retry on a new connection.
    case protocolError(String)
    /// The response body exceeded `HTTP2Client.Configuration.maxResponseBodyBytes`.
    case responseTooLarge
    /// The client was shut down before the request completed (or after it was shut down).
    case shutdown
    /// The request must reach only public addresses (`PushHTTPRequest.publicAddressesOnly`) and
    /// its host has none: every address it resolved to (or the reused connection's peer) is
    /// loopback, private, link-local… (`IPAddress.range`). Nothing was sent to it; the text names
    /// the addresses refused. Permanent while DNS says so: not transient.
    case addressNotPublic(String)
    /// Any other libcurl failure (`code` is the raw `CURLcode`; negative codes are ours).
    case other(code: Int, message: String)

    /// True for failures where the request may not have been processed and trying again
    /// (on a fresh connection, after a back-off) is reasonable: connect, timeout, protocol errors.
    public var isTransient: Bool {
        switch self {
        case .connect, .timeout, .protocolError, .sendByPassed, .audienceChanged: return true
        case .tls, .certificateRejected, .responseTooLarge, .shutdown, .addressNotPublic, .other: return false
        }
    }

    /// libcurl keeps the *first* failure text of a transfer in its error buffer: a socket error during the
    /// TLS handshake reads "Recv failure: …"/"Send failure: …" (from the socket layer) or mentions
    /// OpenSSL's SSL_ERROR_SYSCALL (EOF), even though the final code is CURLE_SSL_CONNECT_ERROR.
    static func isSocketFailureDuringHandshake(_ message: String) -> Bool {
        message.hasPrefix("Recv failure") || message.hasPrefix("Send failure") || message.contains("SSL_ERROR_SYSCALL")
    }

    /// Maps a failed transfer's `CURLcode` (never `CURLE_OK`) to a transport error.
    static func from(code: CURLcode, message: String, bodyTooLarge: Bool) -> PushTransportError {
        if bodyTooLarge { return .responseTooLarge }
        switch code {
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY, CURLE_COULDNT_CONNECT:
            return .connect(message)
        case CURLE_SSL_CONNECT_ERROR where isSocketFailureDuringHandshake(message):
            // The peer reset or closed the TCP connection mid-handshake (server restarting, killed,
            // overloaded): a network condition, not a TLS configuration problem.
            return .connect(message)
        case CURLE_OPERATION_TIMEDOUT:
            return .timeout
        case CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH, CURLE_SSL_INVALIDCERTSTATUS:
            // The server's certificate (CURLE_SSL_CACERT is the same code since 7.62).
            return .certificateRejected(message)
        case CURLE_SSL_CONNECT_ERROR, CURLE_SSL_CERTPROBLEM,
             CURLE_SSL_CIPHER, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_CRL_BADFILE,
             CURLE_SSL_ENGINE_NOTFOUND, CURLE_SSL_ENGINE_SETFAILED, CURLE_SSL_ENGINE_INITFAILED,
             CURLE_SSL_SHUTDOWN_FAILED, CURLE_USE_SSL_FAILED, CURLE_SSL_CLIENTCERT:
            return .tls(message)
        case CURLE_HTTP2, CURLE_HTTP2_STREAM, CURLE_GOT_NOTHING, CURLE_RECV_ERROR, CURLE_SEND_ERROR,
             CURLE_PARTIAL_FILE, CURLE_WEIRD_SERVER_REPLY, CURLE_HTTP3:
            return .protocolError(message)
        default:
            return .other(code: Int(code.rawValue), message: message)
        }
    }
}

extension PushTransportError: PushTransportFailure {
    /// False for `.connect`, `.certificateRejected` and `.sendByPassed`: no connection was made
    /// (or its handshake refused the server), or the request never got a stream, so it never left this host
    /// (the queue then retries without counting the attempt, `PushOutcome.notSent`). A timeout
    /// may have struck after the request was sent, so it counts.
    public var mayHaveReachedProvider: Bool {
        switch self {
        case .connect, .sendByPassed, .audienceChanged, .addressNotPublic, .certificateRejected: false
        default: true
        }
    }

    /// The verifier's text for `.certificateRejected` (`PushClassification.certificateRejected`).
    public var rejectedCertificate: String? {
        if case .certificateRejected(let text) = self { text } else { nil }
    }

    /// True for `.sendByPassed`: dropped unsent at its deadline (`PushClassification.sendByPassed`).
    public var missedSendBy: Bool { self == .sendByPassed }

    /// True for `.audienceChanged` (`PushClassification.audienceChanged`).
    public var waitedPastAudienceChange: Bool { self == .audienceChanged }
}
