extension WebSocketClient {
    /// Limits for a client's connections.
    public struct Configuration: Sendable {
        public var maxMessageSize: Int
        public var maxQueuedBytes: Int
        public var maxQueuedMessages: Int
        public var maxConnections: Int
        public var connectTimeout: Duration
        public var pingAfterIdle: Duration
        public var hangUpAfterIdle: Duration
        public var shutdownFlushTimeout: Duration
        /// How `wss://` connections verify servers.
        public var tls: ClientTLS

        /// - Parameters:
        ///   - maxMessageSize: Largest inbound message; a larger one closes with 1009. Default 1 MiB.
        ///   - maxQueuedBytes: Outbound bytes a connection may have waiting before it is closed with 4000.
        ///     Default 8 MiB.
        ///   - maxQueuedMessages: Outbound messages a connection may have waiting; same. Default 16,384.
        ///   - maxConnections: Connections this client holds at once; sizes libwebsockets' descriptor table.
        ///     Default 10,000 (the process' RLIMIT_NOFILE must allow them).
        ///   - connectTimeout: Time allowed for TCP connect and handshake. Default 10 s.
        ///   - pingAfterIdle: An idle connection is sent a PING after this long. Default 30 s. Both idle spans are
        ///     counted in whole seconds, by a once-a-second sweep: a PING follows up to a second later.
        ///   - hangUpAfterIdle: A connection with no PONG or traffic for this long is closed. Default 60 s.
        ///   - shutdownFlushTimeout: How long `shutdown()` waits for queues to drain. Default 5 s.
        ///   - tls: How `wss://` connections verify servers. Default: against the system's CA store.
        public init(
            maxMessageSize: Int = 1 << 20,
            maxQueuedBytes: Int = 8 << 20,
            maxQueuedMessages: Int = 16_384,
            maxConnections: Int = 10_000,
            connectTimeout: Duration = .seconds(10),
            pingAfterIdle: Duration = .seconds(30),
            hangUpAfterIdle: Duration = .seconds(60),
            shutdownFlushTimeout: Duration = .seconds(5),
            tls: ClientTLS = ClientTLS()
        ) {
            self.tls = tls
            self.maxMessageSize = maxMessageSize
            self.maxQueuedBytes = maxQueuedBytes
            self.maxQueuedMessages = maxQueuedMessages
            self.maxConnections = maxConnections
            self.connectTimeout = connectTimeout
            self.pingAfterIdle = pingAfterIdle
            self.hangUpAfterIdle = hangUpAfterIdle
            self.shutdownFlushTimeout = shutdownFlushTimeout
        }
    }
}
