import Logging

/// Outgoing WebSocket connections, as many as needed, serviced by one libwebsockets thread.
///
/// Events arrive through the `onEvent` handler on the service thread, exactly as for `WebSocketServer`.
/// `connect` returns an id at once; the connection later reports `opened`, or `closed` (1006, with the error
/// as reason) if it could not connect. Reconnecting is left to the caller. All methods may be called from any
/// thread.
public final class WebSocketClient: Sendable {
    private let loop: ServiceLoop
    private let flushTimeout: Duration

    /// Starts the client's service thread; connections are made with `connect`. Throws
    /// `WebSocketTransportError.invalidCertificate` when the configured CA file cannot be read.
    public init(
        configuration: Configuration = Configuration(), logger: Logger = Logger(label: "tablecast.websocket-client"),
        onEvent: @escaping WebSocketEventHandler
    ) throws {
        try configuration.tls.validate()
        loop = try ServiceLoop(
            role: .client,
            settings: ContextSettings(
                port: nil, host: nil, subprotocols: [],
                handshakeTimeoutSeconds: configuration.connectTimeout.wholeSeconds,
                httpIdleTimeoutSeconds: configuration.connectTimeout.wholeSeconds,
                pingAfterIdleSeconds: configuration.pingAfterIdle.wholeSeconds,
                hangUpAfterIdleSeconds: configuration.hangUpAfterIdle.wholeSeconds,
                maxConnections: configuration.maxConnections, clientTLS: configuration.tls),
            limits: ConnectionLimits(
                maxMessageSize: configuration.maxMessageSize, maxQueuedBytes: configuration.maxQueuedBytes,
                maxQueuedMessages: configuration.maxQueuedMessages),
            metrics: nil, logger: logger, handler: onEvent)
        flushTimeout = configuration.shutdownFlushTimeout
    }

    deinit {
        loop.submit(.stop)
    }

    /// Starts connecting; messages sent before the connection opens are queued and written once it does.
    /// libwebsockets resolves a host name on the service thread, blocking it: the load tester should pass an
    /// IP address.
    @discardableResult
    public func connect(_ request: WebSocketConnectRequest) -> WebSocketConnectionID {
        let id = loop.makeConnectionID()
        loop.submit(.connect(id, request))
        return id
    }

    /// Queues `message` for one connection (copied once per write: client frames are masked in place).
    public func send(_ message: WebSocketMessage, to connection: WebSocketConnectionID) {
        loop.submit(.send(message, connection))
    }

    /// Queues `message` for each of `connections`.
    public func send(_ message: WebSocketMessage, to connections: [WebSocketConnectionID]) {
        loop.submit(.sendMany([message], connections))
    }

    /// Closes a connection with `code` and `reason` after what is already queued for it is written.
    public func close(
        _ connection: WebSocketConnectionID, code: WebSocketCloseCode = .normalClosure, reason: String = ""
    ) {
        loop.submit(.close(connection, WebSocketCloseFrame(code: code, reason: reason)))
    }

    /// Drops a connection without a close frame, as a failing network would: its socket is shut down, the peer
    /// sees the TCP connection end, and the connection is reported closed as lost. For tests and load tools.
    public func abort(_ connection: WebSocketConnectionID) {
        loop.submit(.abort(connection))
    }

    /// Closes every connection with 1000 once its queue is flushed (or after `shutdownFlushTimeout`) and stops
    /// the service thread.
    public func shutdown() async {
        await loop.shutdown(
            closingWith: WebSocketCloseFrame(code: .normalClosure, reason: "client shutting down"),
            flushTimeout: flushTimeout)
    }
}
