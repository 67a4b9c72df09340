import CCurl
import CCurlShim

/// One blocking GET through libcurl's easy interface, for a small document from a local service:
/// the provider double's request log, which the web demo shows in the local push demo (OP-6).
/// Pushes never use it; they go through `HTTP2Client`.
public enum HTTPGet {
    /// Fetches `url` and returns what the server answered, whatever the status.
    ///
    /// - Parameters:
    ///   - url: an absolute `http://` or `https://` URL.
    ///   - caFile: a PEM bundle of extra trust anchors (`HERALD_CA_FILE`), added to the system CAs.
    ///   - timeoutMilliseconds: the whole exchange, connection included.
    ///   - maxBodyBytes: a longer body fails with `.responseTooLarge`.
    /// - Returns: the status and body (headers are not kept).
    /// - Throws: `PushTransportError` when no complete response arrived.
    /// - Important: This blocks the calling thread: never call it on an event loop.
    public static func fetch(_ url: String, caFile: String?, timeoutMilliseconds: Int = 5000,
                             maxBodyBytes: Int = 8 << 20) throws(PushTransportError) -> PushHTTPResponse {
        if let curlStartFailure { throw curlStartFailure }
        guard let handle = curl_easy_init() else {
            throw .other(code: -1, message: "libcurl could not be initialised")
        }
        defer { curl_easy_cleanup(handle) }
        let sink = BodySink(limit: maxBodyBytes)
        let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE))
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
        defer { errorBuffer.deallocate() }

        let code: CURLcode = withExtendedLifetime(sink) {
            let me = Unmanaged.passUnretained(sink).toOpaque()
            _ = ccurl_easy_setopt_str(handle, CURLOPT_URL, url)
            _ = ccurl_easy_setopt_str(handle, CURLOPT_PROTOCOLS_STR, "http,https")
            _ = ccurl_easy_setopt_long(handle, CURLOPT_NOSIGNAL, 1)
            _ = ccurl_easy_setopt_long(handle, CURLOPT_HTTPGET, 1)
            _ = ccurl_easy_setopt_long(handle, CURLOPT_TIMEOUT_MS, timeoutMilliseconds)
            _ = ccurl_easy_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, min(timeoutMilliseconds, 3000))
            if let caFile {
                _ = ccurl_easy_setopt_str(handle, CURLOPT_CAINFO, caFile)
                if let directory = builtInCAPath { _ = ccurl_easy_setopt_str(handle, CURLOPT_CAPATH, directory) }
            }
            _ = ccurl_easy_setopt_ptr(handle, CURLOPT_ERRORBUFFER, errorBuffer)
            _ = ccurl_easy_setopt_data_cb(handle, CURLOPT_WRITEFUNCTION, bodyCallback)
            _ = ccurl_easy_setopt_ptr(handle, CURLOPT_WRITEDATA, me)
            return curl_easy_perform(handle)
        }
        guard code == CURLE_OK else {
            let detail = errorBuffer.pointee == 0 ? String(cString: curl_easy_strerror(code)) : String(cString: errorBuffer)
            throw PushTransportError.from(code: code, message: detail, bodyTooLarge: sink.tooLarge)
        }
        var status = 0
        _ = ccurl_easy_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        return PushHTTPResponse(status: status, headers: [], body: sink.body)
    }
}

/// The body as it arrives; used only by the thread inside `curl_easy_perform`.
private final class BodySink {
    let limit: Int
    var body: [UInt8] = []
    var tooLarge = false

    init(limit: Int) { self.limit = limit }
}

private let bodyCallback: ccurl_data_cb = { pointer, size, count, userdata in
    let n = size * count
    guard let userdata else { return n }
    let sink = Unmanaged<BodySink>.fromOpaque(userdata).takeUnretainedValue()
    guard sink.body.count + n <= sink.limit else {
        sink.tooLarge = true
        return 0   // a short count makes libcurl stop with CURLE_WRITE_ERROR
    }
    sink.body.append(contentsOf: UnsafeRawBufferPointer(start: pointer, count: n))
    return n
}
