import CLibWebSockets

/// The client role's connection handling on the service thread.
extension ServiceLoop {
    func connect(_ id: WebSocketConnectionID, _ request: WebSocketConnectRequest) {
        let connection = Connection(id: id, loop: self)
        let strings = ClientRequestStrings(request)
        connection.clientRequest = strings
        register(connection, wsi: nil)
        if isDraining {
            finish(connection, detail: "client is shutting down")
            return
        }
        var info = lws_client_connect_info()
        info.context = context
        info.address = UnsafePointer(strings.address)
        info.port = Int32(request.port)
        info.path = UnsafePointer(strings.path)
        info.host = UnsafePointer(strings.host)
        info.origin = UnsafePointer(strings.origin ?? strings.host)
        info.protocol = UnsafePointer(strings.subprotocol)
        info.ietf_version_or_minus_one = -1
        // Not lws' default policy, which pings after 300 s: the loop does (see `Liveness`).
        info.retry_and_idle_policy = UnsafePointer(storage.retryPolicy)
        if let localAddress = strings.localAddress { info.iface = UnsafePointer(localAddress) }
        if request.usesTLS {
            var flags = LCCSCF_USE_SSL.rawValue
            if !clientTLS.verifiesCertificates {
                flags |=
                    LCCSCF_ALLOW_SELFSIGNED.rawValue | LCCSCF_SKIP_SERVER_CERT_HOSTNAME_CHECK.rawValue
                    | LCCSCF_ALLOW_EXPIRED.rawValue | LCCSCF_ALLOW_INSECURE.rawValue
            }
            info.ssl_connection = Int32(flags)
        }
        info.opaque_user_data = Unmanaged.passUnretained(connection).toOpaque()
        // lws may report a failure through CLIENT_CONNECTION_ERROR before this returns; finish is idempotent.
        if let wsi = lws_client_connect_via_info(&info) {
            if connections[id] != nil { connection.wsi = wsi }
        } else {
            finish(connection, detail: "connect to \(request.host):\(request.port) failed")
        }
    }

    /// Shuts the connection's socket down without a close frame: the peer sees the TCP connection end, as when a
    /// network fails, and lws then closes the connection as lost.
    func abort(_ id: WebSocketConnectionID) {
        guard let wsi = connections[id]?.wsi else { return }
        let descriptor = lws_get_socket_fd(wsi)
        if descriptor >= 0 { _ = CLibWebSockets.shutdown(descriptor, Int32(SHUT_RDWR)) }
    }

    func clientEstablished(_ wsi: OpaquePointer) {
        guard let connection = connection(for: wsi) else { return }
        connection.didOpen(wsi)
        connection.startReading(wsi)
        let request = connection.clientRequest?.request
        let target = request?.path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false) ?? ["/"]
        let info = WebSocketConnectionInfo(
            id: connection.id,
            remoteAddress: Self.peerAddress(wsi),
            path: String(target[0]),
            query: target.count > 1 ? String(target[1]) : nil,
            origin: request.map { $0.origin ?? "http://\($0.host):\($0.port)" },
            subprotocol: request?.subprotocol)
        handler(.opened(info))
    }

    /// `input` points at lws' write cursor into the handshake buffer; `length` is the space left.
    func appendHandshakeHeaders(_ wsi: OpaquePointer, _ input: UnsafeMutableRawPointer?, _ length: Int) -> Int32 {
        guard let input, let headers = connection(for: wsi)?.clientRequest?.headers, !headers.isEmpty else { return 0 }
        let cursor = input.assumingMemoryBound(to: UnsafeMutablePointer<UInt8>?.self)
        guard let start = cursor.pointee else { return -1 }
        let end = start + length
        for (name, value) in headers {
            let failed = name.withUnsafeBufferPointer { name in
                value.withUnsafeBufferPointer { value in
                    lws_add_http_header_by_name(
                        wsi, name.baseAddress, value.baseAddress, Int32(value.count), cursor, end) != 0
                }
            }
            if failed { return -1 }
        }
        return 0
    }
}
