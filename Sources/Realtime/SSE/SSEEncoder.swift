/// Builds Server-Sent Events bytes (WHATWG HTML §9.2, "event stream interpretation").
public enum SSEEncoder {
    /// One event. `data` is split on CR, LF and CRLF into one `data:` line each, so no raw line
    /// break can end a field early (RT-8a). `id` and `event` must already be free of CR/LF/NUL
    /// (`StreamCursor` and `EventName` guarantee it).
    ///
    /// - Returns: UTF-8 bytes ending with the blank line that dispatches the event.
    public static func event(id: String?, event: String?, data: String) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(data.utf8.count + 64)
        if let id {
            out.append(contentsOf: "id: ".utf8)
            out.append(contentsOf: id.utf8)
            out.append(10)
        }
        if let event {
            out.append(contentsOf: "event: ".utf8)
            out.append(contentsOf: event.utf8)
            out.append(10)
        }
        out.append(contentsOf: "data: ".utf8)
        var previousWasCR = false
        for byte in data.utf8 {
            switch byte {
            case 13:
                out.append(contentsOf: "\ndata: ".utf8)
                previousWasCR = true
                continue
            case 10:
                if !previousWasCR { out.append(contentsOf: "\ndata: ".utf8) }
            default:
                out.append(byte)
            }
            previousWasCR = false
        }
        out.append(10)
        out.append(10)
        return out
    }

    /// A comment line (`: text`), ignored by clients; used as the heartbeat that keeps proxies
    /// from closing an idle stream.
    public static func comment(_ text: String) -> [UInt8] {
        Array((": " + text.filter { $0 != "\r" && $0 != "\n" } + "\n\n").utf8)
    }

    /// The `retry:` field: how long (ms) a client waits before reconnecting.
    public static func retry(milliseconds: Int) -> [UInt8] {
        Array("retry: \(milliseconds)\n\n".utf8)
    }
}
