import CLinux
import CNGHTTP2
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

// nghttp2's C callbacks: each finds its connection in user_data and calls the driver.

// MARK: - C callbacks (user_data is the connection; each runs on the driver thread)

func h2Connection(_ userData: UnsafeMutableRawPointer?) -> H2Connection {
    Unmanaged<H2Connection>.fromOpaque(userData!).takeUnretainedValue()
}

let h2OnHeader: nghttp2_on_header_callback = { _, frame, name, nameLength, value, valueLength, _, userData in
    guard let frame, let name, let value else { return 0 }
    let connection = h2Connection(userData)
    connection.driver?.onHeader(connection, streamID: CNGHTTP2_frame_stream_id(frame), category: Int32(CNGHTTP2_headers_category(frame)),
                                name: UnsafeBufferPointer(start: name, count: nameLength),
                                value: UnsafeBufferPointer(start: value, count: valueLength))
    return 0
}

let h2OnDataChunk: nghttp2_on_data_chunk_recv_callback = { _, _, streamID, data, length, userData in
    let connection = h2Connection(userData)
    connection.driver?.onData(connection, streamID: streamID, data: UnsafeBufferPointer(start: data, count: length))
    return 0
}

let h2OnStreamClose: nghttp2_on_stream_close_callback = { _, streamID, errorCode, userData in
    let connection = h2Connection(userData)
    connection.driver?.onStreamClose(connection, streamID: streamID, errorCode: errorCode)
    return 0
}

let h2OnFrameRecv: nghttp2_on_frame_recv_callback = { _, frame, userData in
    guard let frame else { return 0 }
    let connection = h2Connection(userData)
    connection.driver?.onFrameRecv(connection, type: CNGHTTP2_frame_type(frame), frame: frame)
    return 0
}

let h2OnFrameSend: nghttp2_on_frame_send_callback = { _, frame, userData in
    guard let frame else { return 0 }
    let connection = h2Connection(userData)
    connection.driver?.onFrameSend(connection, type: CNGHTTP2_frame_type(frame), streamID: CNGHTTP2_frame_stream_id(frame))
    return 0
}

/// Copies the next piece of a request body into nghttp2's frame buffer (`source` is the request).
let h2ReadBody: nghttp2_data_source_read_callback = { _, _, buffer, length, flags, source, _ in
    guard let source, let buffer, let flags, let raw = source.pointee.ptr else { return Int(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue) }
    let r = Unmanaged<H2Request>.fromOpaque(raw).takeUnretainedValue()
    guard let block = r.block else { return Int(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue) }
    let n = max(0, min(length, block.bodyCount - r.bodyOffset))
    if n > 0 { buffer.update(from: block.body + r.bodyOffset, count: n) }
    r.bodyOffset += n
    if r.bodyOffset >= block.bodyCount { flags.pointee |= UInt32(NGHTTP2_DATA_FLAG_EOF.rawValue) }
    return n
}
