import Foundation
import Logging
import MemoryBudget

/// A WebSocket server (with `/healthz`, `/metrics` and static files over HTTP on the same port) running on its
/// own libwebsockets service thread.
///
/// Events arrive through the `onEvent` handler on that thread (see `WebSocketEventHandler`). `send`,
/// `broadcast` and `close` may be called from any thread, including from the handler; they return at once and
/// the service thread does the work.
///
/// Fan-out: encode a `WebSocketMessage` once and pass it to `send(_:to:)` with many connections or to
/// `broadcast(_:)`; each connection queues a reference to the same buffer. A connection whose queue passes
/// `maxQueuedMessages` or `maxQueuedBytes` is closed with 4000 (`WebSocketCloseCode.slowConsumer`), reason
/// "outbound queue overflow", so that it reconnects and resynchronises; other connections are unaffected.
public final class WebSocketServer: Sendable {
    private let loop: ServiceLoop
    private let flushTimeout: Duration
    private let tls: ServerTLS?

    /// The port the server listens on (the ephemeral one when configured with port 0).
    public var port: Int { loop.port }

    /// Starts listening and serving. Throws `WebSocketTransportError.listenFailed` if the port is taken, with a message
    /// that says so, and `.invalidCertificate` if the TLS certificate or key is missing, unreadable, or they do not match.
    public init(
        configuration: Configuration, logger: Logger = Logger(label: "tablecast.websocket"),
        onEvent: @escaping WebSocketEventHandler
    ) throws {
        try configuration.validate()
        try configuration.tls?.validate()
        tls = configuration.tls
        try ListenProbe.check(host: configuration.host, port: configuration.port)
        loop = try ServiceLoop(
            role: .server(
                HTTPRouter(
                    metricsPage: configuration.metricsPage, access: configuration.endpointAccess,
                    staticFiles: configuration.staticFiles, healthStatus: configuration.healthStatus,
                    api: configuration.api)),
            settings: ContextSettings(
                port: configuration.port, host: configuration.host, subprotocols: configuration.subprotocols,
                handshakeTimeoutSeconds: configuration.handshakeTimeout.wholeSeconds,
                maxHandshakesPerAddress: configuration.maxHandshakesPerAddress,
                httpIdleTimeoutSeconds: configuration.httpIdleTimeout.wholeSeconds,
                pingAfterIdleSeconds: configuration.pingAfterIdle.wholeSeconds,
                hangUpAfterIdleSeconds: configuration.hangUpAfterIdle.wholeSeconds,
                maxConnections: configuration.maxConnections, serverTLS: configuration.tls),
            limits: ConnectionLimits(
                maxMessageSize: configuration.maxMessageSize, maxQueuedBytes: configuration.maxQueuedBytes,
                maxQueuedMessages: configuration.maxQueuedMessages,
                maxUnconsumedMessages: configuration.maxUnconsumedMessages,
                maxUnconsumedBytes: configuration.maxUnconsumedBytes,
                slowConsumerCloseSeconds: configuration.slowConsumerCloseTimeout.wholeSeconds),
            budget: configuration.memoryBudget,
            metrics: TransportMetrics(factory: configuration.metricsFactory),
            logger: logger, handler: onEvent)
        flushTimeout = configuration.shutdownFlushTimeout
    }

    deinit {
        loop.submit(.stop)
    }

    /// Loads the TLS certificate and key again from their files (renewed certificates) for new connections;
    /// open connections are not disturbed. The new pair is checked first: when it is unreadable or mismatched
    /// this throws ``WebSocketTransportError/invalidCertificate`` and the server keeps the pair it has.
    public func reloadCertificates() async throws {
        guard let tls else {
            throw WebSocketTransportError.invalidConfiguration.with(message: "the server does not serve TLS")
        }
        try tls.validate()
        await withCheckedContinuation { continuation in
            loop.submit(.reloadCertificates(tls, done: { continuation.resume() }))
        }
    }

    /// Reports that the application is done with the oldest message of `connection` it was given (with inbound
    /// flow control configured): a connection paused at a bound is read again once half of it is consumed.
    public func consumed(_ connection: WebSocketConnectionID) {
        loop.consumed(connection)
    }

    /// Outbound messages not written yet, across connections: handed to `send` and not taken up yet, or queued,
    /// counting at most 64 per connection (a reader that stopped reading weighs little). It grows when the server
    /// sends faster than its connections take: how far behind the fan-out is. A relaxed read, from any thread.
    public var outboundBacklog: Int { loop.outboundBacklog.load(ordering: .relaxed) }

    /// The memory budget the server counts its connections' outbound queues and inbound backlogs in (see
    /// ``Configuration/memoryBudget``).
    public var memoryBudget: MemoryBudget { loop.budget }

    /// Connections open or in their handshake. A relaxed read, from any thread.
    public var connectionCount: Int { loop.connectionCount.load(ordering: .relaxed) }

    /// Throws ``WebSocketTransportError/listenFailed`` naming the problem ("port 9350 is already in use") when
    /// `host:port` cannot be listened on now; the initializer checks the same. For an application that would rather
    /// find out before it opens its files.
    public static func checkListenAddress(host: String?, port: Int) throws {
        try ListenProbe.check(host: host, port: port)
    }

    /// Queues `message` for one connection. Unknown or closed connections are ignored.
    public func send(_ message: WebSocketMessage, to connection: WebSocketConnectionID) {
        loop.submit(.send(message, connection))
    }

    /// Queues the same `message` for each of `connections`: one buffer, one queue entry per connection.
    public func send(_ message: WebSocketMessage, to connections: [WebSocketConnectionID]) {
        loop.submit(.sendMany([message], connections))
    }

    /// Queues `messages`, in order, for each of `connections`, in one command: each connection's queue has them all
    /// before its next write, so they go out in one send rather than one each (as separate WebSocket messages,
    /// whole and in order).
    public func send(_ messages: [WebSocketMessage], to connections: [WebSocketConnectionID]) {
        guard !messages.isEmpty else { return }
        loop.submit(.sendMany(messages, connections))
    }

    /// Answers API exchange `id` (see ``HTTPAPI``); ignored when it is gone or was answered.
    public func respond(_ id: WebSocketConnectionID, _ reply: HTTPAPIReply) {
        loop.submit(.respond(id, reply))
    }

    /// Makes API exchange `id` an event stream: what is sent to it from now on is framed by `stream`, and
    /// ``close(_:code:reason:)`` ends it.
    public func stream(_ id: WebSocketConnectionID, _ stream: HTTPEventStream) {
        loop.submit(.stream(id, stream))
    }

    /// Queues `message` for every open connection.
    public func broadcast(_ message: WebSocketMessage) {
        loop.submit(.broadcast(message))
    }

    /// Closes a connection with `code` and `reason` after what is already queued for it is written.
    public func close(
        _ connection: WebSocketConnectionID, code: WebSocketCloseCode = .normalClosure, reason: String = ""
    ) {
        loop.submit(.close(connection, WebSocketCloseFrame(code: code, reason: reason)))
    }

    /// Graceful shutdown: stops accepting connections, lets each connection's queue drain, closes it with 1001
    /// (`goingAway`), and returns once the service thread has stopped; connections still open after
    /// `shutdownFlushTimeout` are torn down. Every connection still gets its `closed` event.
    public func shutdown() async {
        await loop.shutdown(
            closingWith: WebSocketCloseFrame(code: .goingAway, reason: "server shutting down"),
            flushTimeout: flushTimeout)
    }
}
