import CLibWebSockets

/// Plain HTTP on the server's port. The response in progress, or the API exchange (see ``HTTPExchange``), hangs off
/// the connection's per-session data.
extension ServiceLoop {
    func serveHTTP(_ wsi: OpaquePointer, _ user: UnsafeMutableRawPointer?, _ input: UnsafeMutableRawPointer?) -> Int32 {
        guard case .server(let router) = role, let slot = Self.responseSlot(user) else { return -1 }
        stopWaiting(wsi)
        let path = input.map { String(cString: $0.assumingMemoryBound(to: CChar.self)) } ?? "/"
        releaseSlot(user)
        if let api = router.api, path.hasPrefix(api.prefix) {
            return beginExchange(wsi, slot, path: path, api: api)
        }
        let request = HTTPRouter.Request(
            isGet: lws_hdr_total_length(wsi, WSI_TOKEN_GET_URI) > 0,
            isHead: lws_hdr_total_length(wsi, WSI_TOKEN_HEAD_URI) > 0,
            path: path, peer: Self.peerAddress(wsi), authorization: Self.header(wsi, WSI_TOKEN_HTTP_AUTHORIZATION),
            ifNoneMatch: Self.header(wsi, WSI_TOKEN_HTTP_IF_NONE_MATCH), host: Self.header(wsi, WSI_TOKEN_HOST))
        let response = router.respond(to: request, openConnections: connections.count)
        guard response.writeHeaders(wsi) else { return -1 }
        if response.omitsBody { return transactionCompleted(wsi) }
        slot.pointee = Unmanaged.passRetained(response as AnyObject).toOpaque()
        lws_callback_on_writable(wsi)
        return 0
    }

    func continueHTTP(_ wsi: OpaquePointer, _ user: UnsafeMutableRawPointer?) -> Int32 {
        guard let slot = Self.responseSlot(user), let pointer = slot.pointee else { return 0 }
        let object = Unmanaged<AnyObject>.fromOpaque(pointer).takeUnretainedValue()
        let response: HTTPResponse
        var closes = false
        if let exchange = object as? HTTPExchange {
            switch exchange.state {
            case .streaming(let stream):
                return writeStream(exchange, stream)
            case .answering(let answer, let headersWritten):
                closes = exchange.closesAfterAnswer
                if !headersWritten {
                    exchange.state = .answering(answer, headersWritten: true)
                    guard answer.writeHeaders(wsi) else { return -1 }
                    if answer.omitsBody { return completeTransaction(wsi, user, closes: closes) }
                    lws_callback_on_writable(wsi)
                    return 0
                }
                response = answer
            case .receiving, .waiting:
                return 0
            }
        } else if let plain = object as? HTTPResponse {
            response = plain
        } else {
            return 0
        }
        switch response.writeBody(wsi) {
        case nil:
            return -1
        case false:
            lws_callback_on_writable(wsi)
            return 0
        case true:
            return completeTransaction(wsi, user, closes: closes)
        }
    }

    /// The response is written: keep-alive waits for the next request on this connection, or closes if lws says so.
    private func completeTransaction(_ wsi: OpaquePointer, _ user: UnsafeMutableRawPointer?, closes: Bool) -> Int32 {
        releaseSlot(user)
        if closes { return -1 }
        return transactionCompleted(wsi)
    }

    /// lws readies the connection for its next request (0), or says to close it (-1).
    private func transactionCompleted(_ wsi: OpaquePointer) -> Int32 {
        guard lws_http_transaction_completed(wsi) == 0 else { return -1 }
        keepAlive(wsi)
        return 0
    }

    /// Lets go of what hangs off the connection; an exchange ends (the application is told).
    func releaseSlot(_ user: UnsafeMutableRawPointer?) {
        guard let slot = Self.responseSlot(user), let pointer = slot.pointee else { return }
        slot.pointee = nil
        let object = Unmanaged<AnyObject>.fromOpaque(pointer).takeRetainedValue()
        guard let exchange = object as? HTTPExchange else { return }
        dropStreamQueue(exchange)
        exchanges[exchange.id] = nil
        stopIfDrained()
        if exchange.dispatched, case .server(let router) = role, let api = router.api {
            api.onEvent(.ended(exchange.id))
        }
    }

    /// The exchange hanging off the connection, if any.
    func exchange(_ user: UnsafeMutableRawPointer?) -> HTTPExchange? {
        guard let slot = Self.responseSlot(user), let pointer = slot.pointee else { return nil }
        return Unmanaged<AnyObject>.fromOpaque(pointer).takeUnretainedValue() as? HTTPExchange
    }

    static func responseSlot(_ user: UnsafeMutableRawPointer?) -> UnsafeMutablePointer<UnsafeMutableRawPointer?>? {
        user?.assumingMemoryBound(to: UnsafeMutableRawPointer?.self)
    }
}
