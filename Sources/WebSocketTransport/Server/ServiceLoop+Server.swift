import CLibWebSockets

/// The server role's connection handling on the service thread.
extension ServiceLoop {
    /// Refuses an upgrade with 426 when it is not WebSocket version 13 (RFC 6455 §4.4: lws would go on with
    /// another version number and then ignore the frames), with 503 when at the connection limit or shutting
    /// down; lets it proceed otherwise.
    func confirmUpgrade(_ wsi: OpaquePointer) -> Int32 {
        stopWaiting(wsi)
        if lws_hdr_total_length(wsi, WSI_TOKEN_UPGRADE) > 0, Self.header(wsi, WSI_TOKEN_VERSION) != "13" {
            return refuseVersion(wsi)
        }
        guard isDraining || connections.count >= maxConnections else { return 0 }
        metrics?.connectionsRejected.increment()
        // >0 tells lws that we answered the request ourselves.
        return lws_return_http_status(wsi, UInt32(HTTP_STATUS_SERVICE_UNAVAILABLE.rawValue), nil) == 0 ? 1 : -1
    }

    /// 426 Upgrade Required with the version this server speaks, as RFC 6455 §4.4 asks. Written whole: lws' header
    /// helpers know no reason phrase for 426 and answer in the request's HTTP version, not yet parsed at this point.
    private func refuseVersion(_ wsi: OpaquePointer) -> Int32 {
        let response = Array(
            "HTTP/1.1 426 Upgrade Required\r\nSec-WebSocket-Version: 13\r\nContent-Length: 0\r\n\r\n".utf8)
        var buffer = [UInt8](repeating: 0, count: WebSocketMessage.headroom) + response
        let written = buffer.withUnsafeMutableBufferPointer {
            lws_write(wsi, $0.baseAddress! + WebSocketMessage.headroom, response.count, LWS_WRITE_HTTP_HEADERS)
        }
        // >0 tells lws that we answered the request ourselves.
        return written == response.count ? 1 : -1
    }

    func accept(_ wsi: OpaquePointer) {
        let connection = Connection(id: makeConnectionID(), loop: self)
        register(connection, wsi: wsi)
        connection.didOpen(wsi)
        connection.startReading(wsi)
        if let metrics {
            metrics.connectionsAccepted.increment()
            metrics.connectionsOpen.record(Int64(connections.count))
        }
        let requested = Self.header(wsi, WSI_TOKEN_PROTOCOL)
        let info = WebSocketConnectionInfo(
            id: connection.id,
            remoteAddress: Self.peerAddress(wsi),
            path: Self.header(wsi, WSI_TOKEN_GET_URI) ?? "/",
            query: Self.query(wsi),
            origin: Self.header(wsi, WSI_TOKEN_ORIGIN),
            subprotocol: requested == nil ? nil : lws_get_protocol(wsi).map { String(cString: $0.pointee.name) },
            host: Self.header(wsi, WSI_TOKEN_HOST))
        handler(.opened(info))
    }

    static func header(_ wsi: OpaquePointer, _ token: lws_token_indexes) -> String? {
        let length = Int(lws_hdr_total_length(wsi, token))
        guard length > 0 else { return nil }
        var buffer = [CChar](repeating: 0, count: length + 1)
        guard lws_hdr_copy(wsi, &buffer, Int32(buffer.count), token) >= 0 else { return nil }
        return String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// lws splits the query into one fragment per argument; they are joined back with `&`.
    static func query(_ wsi: OpaquePointer) -> String? {
        let total = Int(lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_URI_ARGS))
        guard total > 0 else { return nil }
        var buffer = [CChar](repeating: 0, count: total + 1)
        var arguments: [String] = []
        var index: Int32 = 0
        while lws_hdr_copy_fragment(wsi, &buffer, Int32(buffer.count), WSI_TOKEN_HTTP_URI_ARGS, index) >= 0 {
            arguments.append(
                String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self))
            index += 1
        }
        return arguments.joined(separator: "&")
    }

    static func peerAddress(_ wsi: OpaquePointer) -> String {
        var buffer = [CChar](repeating: 0, count: 64)
        guard let address = lws_get_peer_simple(wsi, &buffer, buffer.count) else { return "" }
        // The listener is dual-stack, so IPv4 peers show up as IPv4-mapped IPv6 addresses.
        return plainIPv4(String(cString: address))
    }
}
