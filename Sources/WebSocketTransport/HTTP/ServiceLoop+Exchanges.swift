import CLibWebSockets
import Dispatch

/// API requests on the service thread: read the body (bounded by the API's size and the handshake timeout), hand
/// the request to the application, and carry out its answer.
extension ServiceLoop {
    func beginExchange(
        _ wsi: OpaquePointer, _ slot: UnsafeMutablePointer<UnsafeMutableRawPointer?>, path: String, api: HTTPAPI
    ) -> Int32 {
        var headers: [String: String] = [:]
        let tokens: [(String, lws_token_indexes)] = [
            ("authorization", WSI_TOKEN_HTTP_AUTHORIZATION), ("content-type", WSI_TOKEN_HTTP_CONTENT_TYPE),
            ("if-none-match", WSI_TOKEN_HTTP_IF_NONE_MATCH), ("origin", WSI_TOKEN_ORIGIN), ("host", WSI_TOKEN_HOST),
            ("access-control-request-headers", WSI_TOKEN_HTTP_AC_REQUEST_HEADERS),
        ]
        for (name, token) in tokens { headers[name] = Self.header(wsi, token) }
        for name in ["idempotency-key", "last-event-id", "access-control-request-method"] {
            headers[name] = Self.customHeader(wsi, name)
        }
        let exchange = HTTPExchange(
            id: makeConnectionID(), wsi: wsi, method: Self.method(wsi), path: path, query: Self.query(wsi),
            headers: headers, peer: Self.peerAddress(wsi))
        slot.pointee = Unmanaged.passRetained(exchange as AnyObject).toOpaque()
        let length = Self.header(wsi, WSI_TOKEN_HTTP_CONTENT_LENGTH).flatMap { Int($0) } ?? 0
        let chunked = Self.header(wsi, WSI_TOKEN_HTTP_TRANSFER_ENCODING)?.lowercased().contains("chunked") ?? false
        if length > api.maxBodyBytes {
            refuseBody(exchange, api)
            return 0
        }
        if chunked {
            // lws 4.1 does not take a chunked request body apart: it would wait on it forever, spinning.
            exchange.closesAfterAnswer = true
            exchange.answer(
                HTTPAPIReply(
                    status: 411,
                    body: Array(
                        #"{"code":"bad_request","message":"send the body with Content-Length: chunked request bodies are not taken"}"#
                            .utf8)))
            return 0
        }
        guard length > 0 else {
            dispatch(exchange, api)
            return 0
        }
        // lws reads the body with the handshake timeout pending: a slow one is cut off.
        exchange.body.reserveCapacity(length)
        return 0
    }

    /// LWS_CALLBACK_HTTP_BODY.
    func receiveBody(_ user: UnsafeMutableRawPointer?, _ input: UnsafeMutableRawPointer?, _ length: Int) -> Int32 {
        guard let exchange = exchange(user), case .receiving = exchange.state,
            case .server(let router) = role, let api = router.api
        else { return 0 }
        guard exchange.body.count + length <= api.maxBodyBytes else {
            refuseBody(exchange, api)
            return 0
        }
        if let input, length > 0 {
            exchange.body.append(
                contentsOf: UnsafeRawBufferPointer(start: UnsafeRawPointer(input), count: length))
        }
        return 0
    }

    /// LWS_CALLBACK_HTTP_BODY_COMPLETION.
    func bodyComplete(_ user: UnsafeMutableRawPointer?) -> Int32 {
        guard let exchange = exchange(user), case .receiving = exchange.state,
            case .server(let router) = role, let api = router.api
        else { return 0 }
        dispatch(exchange, api)
        return 0
    }

    /// 413, and the connection closes: the rest of the body is not read.
    private func refuseBody(_ exchange: HTTPExchange, _ api: HTTPAPI) {
        exchange.closesAfterAnswer = true
        exchange.body = []
        exchange.answer(
            HTTPAPIReply(
                status: 413,
                body: Array(
                    #"{"code":"limit_exceeded","message":"the request body is over \#(api.maxBodyBytes) bytes"}"#.utf8))
        )
    }

    private func dispatch(_ exchange: HTTPExchange, _ api: HTTPAPI) {
        exchange.state = .waiting
        exchange.dispatched = true
        exchanges[exchange.id] = exchange
        // Not a stalled handshake: the request is complete, and the application's time is kept by the loop
        // (`answerOverdueExchanges`). An lws timeout here would be inserted behind every other one pending.
        handshakeEnded(exchange.wsi)
        lws_set_timeout(exchange.wsi, NO_PENDING_TIMEOUT, 0)
        answersDue.add(exchange.id, at: DispatchTime.now().uptimeNanoseconds)
        api.onEvent(.request(exchange.request))
        exchange.body = []
    }

    /// `answerTimeout` after an exchange was dispatched: one still waiting for the application is answered with the
    /// API's `timeoutReply`; one whose answer the reader has not taken yet is dropped, so that a reader that stopped
    /// reading does not hold the connection and the answer's bytes for good. Streams (their heartbeats say when
    /// they are gone) and exchanges that ended are skipped.
    func answerOverdueExchanges(at now: UInt64) {
        while let id = answersDue.popDue(at: now) {
            guard let exchange = exchanges[id], case .server(let router) = role, let api = router.api else { continue }
            switch exchange.state {
            case .waiting:
                logger.warning(
                    "HTTP request unanswered in time",
                    metadata: ["request": "\(id)", "method": "\(exchange.method)", "path": "\(exchange.path)"])
                exchange.answer(api.timeoutReply(exchange.request))
            case .answering:
                killSoon(exchange.wsi, PENDING_TIMEOUT_HTTP_CONTENT)
            case .receiving, .streaming:
                break
            }
        }
    }

    /// The application's answer to exchange `id` (gone already: ignored).
    func respond(_ id: WebSocketConnectionID, _ reply: HTTPAPIReply) {
        guard let exchange = exchanges[id], case .waiting = exchange.state else { return }
        exchange.answer(reply)
    }

    /// Exchange `id` streams from now on.
    func startStream(_ id: WebSocketConnectionID, _ stream: HTTPEventStream) {
        guard let exchange = exchanges[id], case .waiting = exchange.state else { return }
        exchange.state = .streaming(stream)
    }

    private static func method(_ wsi: OpaquePointer) -> String {
        let methods: [(String, lws_token_indexes)] = [
            ("GET", WSI_TOKEN_GET_URI), ("POST", WSI_TOKEN_POST_URI), ("PATCH", WSI_TOKEN_PATCH_URI),
            ("PUT", WSI_TOKEN_PUT_URI), ("DELETE", WSI_TOKEN_DELETE_URI), ("OPTIONS", WSI_TOKEN_OPTIONS_URI),
            ("HEAD", WSI_TOKEN_HEAD_URI),
        ]
        return methods.first { lws_hdr_total_length(wsi, $0.1) > 0 }?.0 ?? "GET"
    }

    /// A header lws has no token for.
    private static func customHeader(_ wsi: OpaquePointer, _ name: String) -> String? {
        let key = name + ":"
        let length = Int(lws_hdr_custom_length(wsi, key, Int32(key.utf8.count)))
        guard length >= 0 else { return nil }
        var buffer = [CChar](repeating: 0, count: length + 1)
        guard lws_hdr_custom_copy(wsi, &buffer, Int32(buffer.count), key, Int32(key.utf8.count)) >= 0 else {
            return nil
        }
        return String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
