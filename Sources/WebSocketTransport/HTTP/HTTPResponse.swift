import CLibWebSockets

/// A complete HTTP response being written, chunk by chunk, from HTTP_WRITEABLE callbacks.
final class HTTPResponse {
    let status: UInt32
    let contentType: String
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
        var headers = [UInt8](repeating: 0, count: WebSocketMessage.headroom + 1024)
        return headers.withUnsafeMutableBufferPointer { headers in
            let start = headers.baseAddress! + WebSocketMessage.headroom
            let end = headers.baseAddress! + headers.count - 1
            var cursor: UnsafeMutablePointer<UInt8>? = start
            return contentType.withCString { contentType in
                lws_add_http_common_headers(wsi, status, contentType, lws_filepos_t(bodyCount), &cursor, end) == 0
                    && lws_finalize_write_http_header(wsi, start, &cursor, end) == 0
            }
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
