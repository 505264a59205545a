import CLibWebSockets

/// The one protocol callback of every context. Global and nonisolated because lws calls it on its service
/// thread; the owning `ServiceLoop` is found through the context's user pointer.
func lwsServiceCallback(
    wsi: OpaquePointer?, reason: lws_callback_reasons, user: UnsafeMutableRawPointer?,
    input: UnsafeMutableRawPointer?, length: Int
) -> Int32 {
    guard let wsi, let context = lws_get_context(wsi), let loop = lws_context_user(context) else { return 0 }
    return Unmanaged<ServiceLoop>.fromOpaque(loop).takeUnretainedValue()
        .handle(wsi, reason, user, input, length)
}

extension ServiceLoop {
    func handle(
        _ wsi: OpaquePointer, _ reason: lws_callback_reasons, _ user: UnsafeMutableRawPointer?,
        _ input: UnsafeMutableRawPointer?, _ length: Int
    ) -> Int32 {
        assert(isOnServiceThread, "libwebsockets called back on a thread other than the service thread")
        switch reason {
        case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
            processInbox()
            runDueTimers()

        case LWS_CALLBACK_SERVER_WRITEABLE, LWS_CALLBACK_CLIENT_WRITEABLE:
            return connection(for: wsi)?.writeable(wsi) ?? 0

        // Never LWS_CALLBACK_RECEIVE: both roles read their connections themselves (see `Connection.startReading`).

        case LWS_CALLBACK_CLOSED, LWS_CALLBACK_CLIENT_CLOSED:
            if let connection = connection(for: wsi) { finish(connection) }

        // Server role.
        case LWS_CALLBACK_FILTER_NETWORK_CONNECTION:
            // While draining, or past the address's cap on handshakes, a new TCP connection is dropped before any
            // request is read.
            return filterNetworkConnection(user)

        case LWS_CALLBACK_SERVER_NEW_CLIENT_INSTANTIATED:
            handshakeBegan(wsi)

        case LWS_CALLBACK_WSI_DESTROY:
            handshakeEnded(wsi)
            stopWaiting(wsi)

        case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE:
            return confirmUpgrade(wsi)

        case LWS_CALLBACK_ESTABLISHED:
            handshakeEnded(wsi)
            accept(wsi)

        case LWS_CALLBACK_HTTP:
            return serveHTTP(wsi, user, input)

        case LWS_CALLBACK_HTTP_WRITEABLE:
            return continueHTTP(wsi, user)

        case LWS_CALLBACK_HTTP_BODY:
            return receiveBody(user, input, length)

        case LWS_CALLBACK_HTTP_BODY_COMPLETION:
            return bodyComplete(user)

        case LWS_CALLBACK_CLOSED_HTTP, LWS_CALLBACK_HTTP_DROP_PROTOCOL:
            releaseSlot(user)

        // Client role.
        case LWS_CALLBACK_CLIENT_APPEND_HANDSHAKE_HEADER:
            return appendHandshakeHeaders(wsi, input, length)

        case LWS_CALLBACK_CLIENT_ESTABLISHED:
            clientEstablished(wsi)

        case LWS_CALLBACK_OPENSSL_PERFORM_SERVER_CERT_VERIFICATION:
            // `user` is OpenSSL's X509_STORE_CTX, `length` its preverify_ok: remember why verification failed so
            // that the close says so (lws' own message only has the error number).
            if length == 0, let user, let error = CLibWebSockets_verificationError(user) {
                connection(for: wsi)?.certificateError = String(cString: error)
            }

        case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
            if let connection = connection(for: wsi) {
                let detail = input.map { String(cString: $0.assumingMemoryBound(to: CChar.self)) }
                if let error = connection.certificateError {
                    connection.closeFrame = WebSocketCloseFrame(
                        code: .tlsHandshakeFailed, reason: "the server's certificate did not verify: \(error)")
                }
                finish(connection, detail: detail ?? "connection failed")
            }

        default:
            break
        }
        return 0
    }
}
