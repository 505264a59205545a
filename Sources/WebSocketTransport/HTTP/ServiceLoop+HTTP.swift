import CLibWebSockets

/// Plain HTTP on the server's port. The response in progress hangs off the connection's per-session data.
extension ServiceLoop {
    func serveHTTP(_ wsi: OpaquePointer, _ user: UnsafeMutableRawPointer?, _ input: UnsafeMutableRawPointer?) -> Int32 {
        guard case .server(let router) = role, let slot = Self.responseSlot(user) else { return -1 }
        let path = input.map { String(cString: $0.assumingMemoryBound(to: CChar.self)) } ?? "/"
        let request = HTTPRouter.Request(
            isGet: lws_hdr_total_length(wsi, WSI_TOKEN_GET_URI) > 0,
            isHead: lws_hdr_total_length(wsi, WSI_TOKEN_HEAD_URI) > 0,
            path: path, peer: Self.peerAddress(wsi), authorization: Self.header(wsi, WSI_TOKEN_HTTP_AUTHORIZATION),
            ifNoneMatch: Self.header(wsi, WSI_TOKEN_HTTP_IF_NONE_MATCH), host: Self.header(wsi, WSI_TOKEN_HOST))
        let response = router.respond(to: request, openConnections: connections.count)
        guard response.writeHeaders(wsi) else { return -1 }
        if response.omitsBody { return lws_http_transaction_completed(wsi) == 0 ? 0 : -1 }
        releaseHTTPResponse(user)
        slot.pointee = Unmanaged.passRetained(response).toOpaque()
        lws_callback_on_writable(wsi)
        return 0
    }

    func continueHTTP(_ wsi: OpaquePointer, _ user: UnsafeMutableRawPointer?) -> Int32 {
        guard let slot = Self.responseSlot(user), let pointer = slot.pointee else { return 0 }
        let response = Unmanaged<HTTPResponse>.fromOpaque(pointer).takeUnretainedValue()
        switch response.writeBody(wsi) {
        case nil:
            return -1
        case false:
            lws_callback_on_writable(wsi)
            return 0
        case true:
            releaseHTTPResponse(user)
            // Keep-alive: wait for the next request on this connection, or close if lws says so.
            return lws_http_transaction_completed(wsi) == 0 ? 0 : -1
        }
    }

    func releaseHTTPResponse(_ user: UnsafeMutableRawPointer?) {
        guard let slot = Self.responseSlot(user), let pointer = slot.pointee else { return }
        Unmanaged<HTTPResponse>.fromOpaque(pointer).release()
        slot.pointee = nil
    }

    private static func responseSlot(_ user: UnsafeMutableRawPointer?) -> UnsafeMutablePointer<
        UnsafeMutableRawPointer?
    >? {
        user?.assumingMemoryBound(to: UnsafeMutableRawPointer?.self)
    }
}
