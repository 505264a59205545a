import CoreMetrics
import Foundation
import MemoryBudget

extension WebSocketServer {
    /// Where the server listens and the limits it enforces.
    public struct Configuration: Sendable {
        public var host: String?
        public var port: Int
        public var subprotocols: [String]
        public var maxMessageSize: Int
        public var maxQueuedBytes: Int
        public var maxQueuedMessages: Int
        public var maxUnconsumedMessages: Int?
        public var maxUnconsumedBytes: Int?
        public var maxConnections: Int
        public var handshakeTimeout: Duration
        public var maxHandshakesPerAddress: Int?
        public var httpIdleTimeout: Duration
        public var pingAfterIdle: Duration
        public var hangUpAfterIdle: Duration
        public var shutdownFlushTimeout: Duration
        public var slowConsumerCloseTimeout: Duration
        /// What GET paths other than `/healthz` and `/metrics` serve; `nil` serves none.
        public var staticFiles: StaticFiles?
        public var metricsFactory: any MetricsFactory
        public var metricsPage: (@Sendable () -> [UInt8])?
        public var endpointAccess: EndpointAccess
        /// Serve https/wss with this certificate and key; `nil` serves plain http/ws.
        public var tls: ServerTLS?
        /// The `status` `/healthz` reports, asked on each request; nil: always `ok`.
        public var healthStatus: (@Sendable () -> String)?
        /// Where outbound queues and inbound backlogs are counted, and the shares they keep to.
        public var memoryBudget: MemoryBudget
        /// The application's HTTP API (see ``HTTPAPI``); nil: none. Set after `init`.
        public var api: HTTPAPI?

        /// - Parameters:
        ///   - host: Address to listen on, e.g. `"127.0.0.1"`; `nil` listens on all IPv4 interfaces.
        ///   - port: TCP port; 0 picks a free one (read it back from `WebSocketServer.port`).
        ///   - subprotocols: `Sec-WebSocket-Protocol` values accepted besides none at all.
        ///   - maxMessageSize: Largest inbound message after reassembly; a larger one closes the connection
        ///     with 1009 (`messageTooBig`). Default 1 MiB.
        ///   - maxQueuedBytes: Outbound payload bytes a connection may have waiting. Past it the connection is
        ///     closed with 4000 (`slowConsumer`) and its queue dropped. A message larger than this on its own (a
        ///     big table's snapshot) is sent anyway and not counted, up to 4 such messages waiting. Default 8 MiB.
        ///   - maxQueuedMessages: Outbound messages a connection may have waiting; same consequence. Default 16,384.
        ///   - maxUnconsumedMessages: Inbound flow control. When set, a connection is no longer read once this many
        ///     of its messages were delivered and not yet reported with `WebSocketServer.consumed(_:)`, and is
        ///     read again when half of them are (TCP then pushes back on the peer). `nil` (the default): no bound
        ///     on their number.
        ///   - maxUnconsumedBytes: The same bound on those messages' payload bytes. With both `nil`, messages are
        ///     delivered as fast as they arrive and the application need not report anything.
        ///   - maxConnections: Open WebSocket connections; upgrades beyond it get HTTP 503. Default 10,000.
        ///   - handshakeTimeout: Time allowed for the HTTP request and WebSocket handshake; a connection that
        ///     stalls in it (a slowloris) is dropped after this long. Whole seconds. Default 5 s.
        ///   - maxHandshakesPerAddress: Stalled handshakes one peer address may have: TCP connections that have
        ///     not completed their WebSocket handshake a second after they were accepted (plain HTTP ones until
        ///     they close). While it has that many, its new connections are closed as soon as they are accepted;
        ///     quicker handshakes are not counted, so a burst of them is not refused. `nil` (the default): no cap.
        ///   - httpIdleTimeout: How long a keep-alive HTTP connection is kept waiting for its next request. Default
        ///     60 s. Counted in whole seconds by the once-a-second sweep: the connection closes up to a second later.
        ///   - pingAfterIdle: A WebSocket connection idle this long is sent a PING. Default 30 s. Both idle spans are
        ///     counted in whole seconds, by a once-a-second sweep: a PING follows up to a second later.
        ///   - hangUpAfterIdle: A WebSocket connection with no PONG or traffic for this long is closed. Default 60 s.
        ///   - shutdownFlushTimeout: How long `shutdown()` waits for queues to drain before tearing connections
        ///     down. Default 5 s.
        ///   - slowConsumerCloseTimeout: How long a connection closed with 4000 may take to read the rest of the
        ///     frame being written and the close frame before its socket is dropped (it stopped reading). Its queue
        ///     is gone by then, so waiting costs little. Whole seconds. Default 30 s.
        ///   - staticFilesDirectory: Directory served for other GET paths (`/` → `index.html`), read on each request.
        ///   - staticFiles: Files served for other GET paths instead (e.g. embedded in the executable); `nil`: the
        ///     directory's, if any.
        ///   - metricsFactory: Where the transport records its metrics (swift-metrics). Default: the process'
        ///     `MetricsSystem.factory`, which the application bootstraps with the backend it chose.
        ///   - metricsPage: What `GET /metrics` answers, rendered by that backend (e.g. Prometheus text); `nil`
        ///     (default) answers 404.
        ///   - endpointAccess: Who may read `/metrics` (`/healthz` is open to all). Default: everyone.
        ///   - tls: Certificate and key to serve TLS with (everything on the port: WebSocket, `/healthz`,
        ///     `/metrics`, files); `nil` (default) serves plain text.
        ///   - healthStatus: The `status` `/healthz` reports (e.g. `degraded`); nil: always `ok`.
        ///   - memoryBudget: The budget the server's queues draw from. Outbound: every connection's queued,
        ///     unwritten messages count in its outbound account (a message charged to another account with
        ///     `WebSocketMessage.charge(to:)` as a small fixed overhead per queue entry, others with their payload
        ///     too); when the account passes its share, the connections whose queues count the most in it are
        ///     closed with 4000, biggest first, until the excess is covered. Inbound (with inbound flow control):
        ///     messages delivered and not yet consumed, and those being assembled, count in its inbound account;
        ///     past its share, a connection that delivers a message stops being read until its backlog is empty.
        ///     Each shed connection and each such pause is recorded with `degraded()`. Default: `.unlimited`.
        public init(
            host: String? = nil,
            port: Int = 8080,
            subprotocols: [String] = [],
            maxMessageSize: Int = 1 << 20,
            maxQueuedBytes: Int = 8 << 20,
            maxQueuedMessages: Int = 16_384,
            maxUnconsumedMessages: Int? = nil,
            maxUnconsumedBytes: Int? = nil,
            maxConnections: Int = 10_000,
            handshakeTimeout: Duration = .seconds(5),
            maxHandshakesPerAddress: Int? = nil,
            httpIdleTimeout: Duration = .seconds(60),
            pingAfterIdle: Duration = .seconds(30),
            hangUpAfterIdle: Duration = .seconds(60),
            shutdownFlushTimeout: Duration = .seconds(5),
            slowConsumerCloseTimeout: Duration = .seconds(30),
            staticFilesDirectory: String? = nil,
            staticFiles: StaticFiles? = nil,
            metricsFactory: any MetricsFactory = MetricsSystem.factory,
            metricsPage: (@Sendable () -> [UInt8])? = nil,
            endpointAccess: EndpointAccess = .everyone,
            tls: ServerTLS? = nil,
            healthStatus: (@Sendable () -> String)? = nil,
            memoryBudget: MemoryBudget = .unlimited
        ) {
            self.healthStatus = healthStatus
            self.memoryBudget = memoryBudget
            self.tls = tls
            self.host = host
            self.port = port
            self.subprotocols = subprotocols
            self.maxMessageSize = maxMessageSize
            self.maxQueuedBytes = maxQueuedBytes
            self.maxQueuedMessages = maxQueuedMessages
            self.maxUnconsumedMessages = maxUnconsumedMessages
            self.maxUnconsumedBytes = maxUnconsumedBytes
            self.maxConnections = maxConnections
            self.handshakeTimeout = handshakeTimeout
            self.maxHandshakesPerAddress = maxHandshakesPerAddress
            self.httpIdleTimeout = httpIdleTimeout
            self.pingAfterIdle = pingAfterIdle
            self.hangUpAfterIdle = hangUpAfterIdle
            self.shutdownFlushTimeout = shutdownFlushTimeout
            self.slowConsumerCloseTimeout = slowConsumerCloseTimeout
            self.staticFiles = staticFiles ?? staticFilesDirectory.map(StaticFiles.directory)
            self.metricsFactory = metricsFactory
            self.metricsPage = metricsPage
            self.endpointAccess = endpointAccess
        }

        func validate() throws {
            guard (0...65_535).contains(port) else {
                throw WebSocketTransportError.invalidConfiguration.with(message: "port \(port) is not in 0…65535")
            }
            guard maxMessageSize > 0, maxQueuedBytes > 0, maxQueuedMessages > 0,
                maxConnections > 0, pingAfterIdle < hangUpAfterIdle, (maxHandshakesPerAddress ?? 1) > 0,
                (maxUnconsumedMessages ?? 2) >= 2,
                (maxUnconsumedBytes ?? 2) >= 2
            else {
                throw WebSocketTransportError.invalidConfiguration.with(
                    message: "sizes and counts must be positive, and pingAfterIdle < hangUpAfterIdle")
            }
        }
    }
}

extension Duration {
    /// Whole seconds, at least 1: lws timeouts are in seconds and 0 means "none".
    var wholeSeconds: Int { max(1, Int(components.seconds)) }

    /// Nanoseconds, as the service loop's uptime clock counts them (a negative span: 0).
    var nanoseconds: UInt64 {
        UInt64(max(0, components.seconds)) * 1_000_000_000 + UInt64(max(0, components.attoseconds)) / 1_000_000_000
    }
}
