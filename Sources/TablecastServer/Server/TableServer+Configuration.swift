import TableStore
import TablecastProtocol

extension TableServer {
    /// Everything `tablecast serve` can be told.
    public struct Configuration: Sendable {
        /// Address to listen on.
        public var host: String
        /// TCP port; 0 picks a free one (read it back from ``TableServer/port``).
        public var port: Int
        /// The SQLite database file; created with the schema if it does not exist.
        public var databasePath: String
        /// Durability of each commit: `.full` (default) survives power loss, `.normal` only a crash of the process.
        public var synchronous: TableStoreOptions.Synchronous
        /// A snapshot is stored every this many versions of a table, so start-up replays at most this much log.
        public var snapshotInterval: Int
        /// Committed batches kept per table (and the log versions kept behind the latest snapshot): how stale a
        /// base may be, and how far back a client can resume without a snapshot.
        public var historyLimit: Int
        /// Who may do what; ``AccessPolicy/open`` (everyone admin) without a tokens file.
        public var policy: AccessPolicy
        /// Listen on a non-loopback address with the open policy anyway.
        public var allowAnonymous: Bool
        /// Origins browsers may connect from. Nil: the server's own pages only (`http://host:port`, and
        /// `localhost` for a loopback host), which stops cross-site WebSocket hijacking.
        public var allowedOrigins: [String]?
        /// Directory served over HTTP (the browser client), or nil.
        public var staticFilesDirectory: String?
        /// Largest message a client may send.
        public var maxMessageBytes: Int
        /// Most entries in one batch.
        public var maxBatchEntries: Int
        /// Edit intents a connection may send per second (burst as large).
        public var intentsPerSecond: Int
        /// Bad messages in a row after which a connection is closed with 1008.
        public var maxConsecutiveBadMessages: Int
        /// Most open WebSocket connections.
        public var maxConnections: Int
        /// Time a connection has for its HTTP request and WebSocket handshake; stalled ones are dropped after it.
        public var handshakeTimeout: Duration
        /// Connections one address may have open before their handshake completes; nil: no cap.
        public var maxHandshakesPerAddress: Int?
        /// Outbound bytes a connection may have queued before it is closed as too slow.
        public var maxQueuedBytes: Int
        /// Outbound messages a connection may have queued before it is closed as too slow.
        public var maxQueuedMessages: Int
        /// Idempotency refs kept per client.
        public var refsPerClient: Int
        /// Intents a table may have waiting to be resolved; more get `rate_limited`, so that writers faster than
        /// the table cannot grow its queue without bound.
        public var maxQueuedIntents: Int

        public init(
            host: String = "127.0.0.1", port: Int = 8080, databasePath: String = "tablecast.db",
            synchronous: TableStoreOptions.Synchronous = .full, snapshotInterval: Int = 1000,
            historyLimit: Int = 10_000, policy: AccessPolicy = .open, allowAnonymous: Bool = false, allowedOrigins: [String]? = nil,
            staticFilesDirectory: String? = nil, maxMessageBytes: Int = 1 << 20, maxBatchEntries: Int = 1000,
            intentsPerSecond: Int = 1000, maxConsecutiveBadMessages: Int = 100, maxConnections: Int = 10_000,
            maxQueuedBytes: Int = 8 << 20, maxQueuedMessages: Int = 16_384, refsPerClient: Int = 10_000,
            maxQueuedIntents: Int = 10_000, handshakeTimeout: Duration = .seconds(5), maxHandshakesPerAddress: Int? = 256
        ) {
            self.host = host
            self.port = port
            self.databasePath = databasePath
            self.synchronous = synchronous
            self.snapshotInterval = snapshotInterval
            self.historyLimit = historyLimit
            self.policy = policy
            self.allowAnonymous = allowAnonymous
            self.allowedOrigins = allowedOrigins
            self.staticFilesDirectory = staticFilesDirectory
            self.maxMessageBytes = maxMessageBytes
            self.maxBatchEntries = maxBatchEntries
            self.intentsPerSecond = intentsPerSecond
            self.maxConsecutiveBadMessages = maxConsecutiveBadMessages
            self.maxConnections = maxConnections
            self.handshakeTimeout = handshakeTimeout
            self.maxHandshakesPerAddress = maxHandshakesPerAddress
            self.maxQueuedBytes = maxQueuedBytes
            self.maxQueuedMessages = maxQueuedMessages
            self.refsPerClient = refsPerClient
            self.maxQueuedIntents = maxQueuedIntents
        }

        /// Whether `host` is a loopback address, where running without tokens is safe.
        public var isLoopback: Bool {
            host == "localhost" || host == "::1" || host.hasPrefix("127.")
        }

        /// The origins of the server's own pages, served on `port`: the default for ``allowedOrigins``.
        func ownOrigins(port: Int) -> [String] {
            var origins = ["http://\(host):\(port)"]
            if isLoopback {
                origins += ["http://localhost:\(port)", "http://127.0.0.1:\(port)", "http://[::1]:\(port)"]
            }
            return origins
        }
    }
}
