import CLibWebSockets

/// A complete HTTP response being written, chunk by chunk, from HTTP_WRITEABLE callbacks.
final class HTTPResponse {
    let status: UInt32
    let contentType: String
    /// Headers besides type and length, names in lower case.
    var headers: [(name: String, value: String)] = []
    /// Headers only (HEAD, 304): `Content-Length` still tells the body's size, the body is not sent.
    var omitsBody = false
    /// An event stream: no `Content-Length`, the body runs until the connection closes.
    var streams = false
    /// `WebSocketMessage.headroom` zero bytes, then the body: lws_write wants headroom before what it writes.
    private let buffer: [UInt8]
    private var offset = WebSocketMessage.headroom

    init(status: UInt32, contentType: String, body: some Collection<UInt8>) {
        self.status = status
        self.contentType = contentType
        var buffer = [UInt8](repeating: 0, count: WebSocketMessage.headroom)
        buffer.append(contentsOf: body)
        self.buffer = buffer
    }

    convenience init(status: UInt32, text: String) {
        self.init(status: status, contentType: "text/plain; charset=utf-8", body: Array(text.utf8))
    }

    var bodyCount: Int { buffer.count - WebSocketMessage.headroom }

    /// Writes the status line and headers; the body follows from `writeBody`.
    func writeHeaders(_ wsi: OpaquePointer) -> Bool {
        var block = [UInt8](repeating: 0, count: WebSocketMessage.headroom + 4096)
        return block.withUnsafeMutableBufferPointer { block in
            let start = block.baseAddress! + WebSocketMessage.headroom
            let end = block.baseAddress! + block.count - 1
            var cursor: UnsafeMutablePointer<UInt8>? = start
            let common = contentType.withCString { contentType in
                lws_add_http_common_headers(
                    wsi, status, contentType, streams ? lws_filepos_t.max : lws_filepos_t(bodyCount),
                    &cursor, end) == 0
            }
            guard common else { return false }
            for (name, value) in headers {
                let added = "\(name):".withCString { namePointer in
                    value.withCString { valuePointer in
                        lws_add_http_header_by_name(
                            wsi, UnsafeRawPointer(namePointer).assumingMemoryBound(to: UInt8.self),
                            UnsafeRawPointer(valuePointer).assumingMemoryBound(to: UInt8.self), Int32(value.utf8.count),
                            &cursor, end)
                    }
                }
                guard added == 0 else { return false }
            }
            return lws_finalize_write_http_header(wsi, start, &cursor, end) == 0
        }
    }

    /// Writes the next chunk; returns `nil` on error, `true` once the whole body is written.
    func writeBody(_ wsi: OpaquePointer) -> Bool? {
        let chunk = min(buffer.count - offset, 16 * 1024)
        let isLast = offset + chunk == buffer.count
        let written = buffer.withUnsafeBufferPointer { buffer in
            lws_write(
                wsi, UnsafeMutablePointer(mutating: buffer.baseAddress! + offset), chunk,
                isLast ? LWS_WRITE_HTTP_FINAL : LWS_WRITE_HTTP)
        }
        guard written >= 0 else { return nil }
        offset += chunk
        return isLast
    }
}
