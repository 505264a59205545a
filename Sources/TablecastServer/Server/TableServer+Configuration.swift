import CoreMetrics
import MemoryBudget
import TableStore
import TablecastProtocol
import WebSocketTransport

extension TableServer {
    /// Everything `tablecast serve` can be told.
    public struct Configuration: Sendable {
        /// Address to listen on.
        public var host: String
        /// TCP port; 0 picks a free one (read it back from ``TableServer/port``).
        public var port: Int
        /// The SQLite database file, created with the schema if it does not exist; or a `postgresql://` URL (see
        /// ``isPostgres``): a database that several nodes share, its schema created on the first start.
        public var databasePath: String
        /// Durability of each commit: `.full` (default) survives power loss, `.normal` only a crash of the process.
        public var synchronous: TableStoreOptions.Synchronous
        /// A snapshot is stored every this many versions of a table, so start-up replays at most this much log.
        public var snapshotInterval: Int
        /// Committed batches kept per table (and the log versions kept behind the latest snapshot): how stale a
        /// base may be, and how far back a client can resume without a snapshot.
        public var historyLimit: Int
        /// The most bytes the encoded updates and rebase layouts kept for one table may take; the count bound is
        /// ``historyLimit``. Older updates are then served from the store's log, and older bases are `stale`.
        public var historyBytes: Int = 16 << 20
        /// The memory budget's limit in bytes (see ``MemoryBudget``): update histories, shared snapshots, history
        /// replies, outbound queues and inbound backlogs each draw from their share of it. Default: half of what the
        /// machine (or the process' cgroup) has.
        public var memoryLimit: Int = MemorySize.defaultLimit()
        /// How much history stays readable (`history`, `snapshotAt`): a number of versions per table and/or an age.
        /// Default: the last 10,000 versions.
        public var historyRetention: HistoryRetention = HistoryRetention(versions: 10_000)
        /// Who may do what; ``AccessPolicy/open`` (everyone admin) without a tokens file.
        public var policy: AccessPolicy
        /// Listen on a non-loopback address with the open policy anyway.
        public var allowAnonymous: Bool
        /// Origins browsers may connect from besides the server's own pages (which are accepted from whatever
        /// address the browser used, see `OriginPolicy`); any other origin is refused with 1008, which stops
        /// cross-site WebSocket hijacking.
        public var allowedOrigins: [String]
        /// Files served over HTTP (the browser client), or nil.
        public var staticFiles: StaticFiles?
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
        /// Stalled handshakes one address may have (connections without a completed upgrade a second after they were
        /// accepted); more are closed on accept. nil: no cap.
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
        /// Where the server records its metrics (swift-metrics); default: the process' `MetricsSystem.factory`.
        public var metricsFactory: any MetricsFactory
        /// What `GET /metrics` answers, rendered by the metrics backend; `nil` answers 404.
        public var metricsPage: (@Sendable () -> [UInt8])?
        /// Per-table intent counters (`tablecast_table_intents_total{table,outcome}`): one series per table and
        /// outcome, so off by default.
        public var perTableMetrics: Bool
        /// Who may read `/healthz` and `/metrics`.
        public var endpointAccess: EndpointAccess
        /// Serve https/wss with this certificate and key (reloaded by ``TableServer/reloadCertificates()``).
        public var tls: ServerTLS?
        /// Test only: every commit waits this long first, so that tests can watch clients answer before the
        /// server does (optimistic edits). Zero in production.
        public var debugCommitDelay: Duration = .zero
        /// What `GET /v1/openapi.yaml` serves (the tablecast executable embeds `web-client-protocol/openapi.yaml`).
        public var openAPIDocument: [UInt8] = []
        /// The protocol's JSON Schemas the document refers to, by file name, served at `GET /v1/schema/NAME`.
        public var openAPISchemas: [String: [UInt8]] = [:]
        /// How often an HTTP event stream with nothing to say writes a comment (15 s; shorter in tests).
        public var eventStreamHeartbeat: Duration = .seconds(15)
        /// How long an HTTP API request may wait for its answer (a commit behind a stalled store, say) before the
        /// server answers 503 `unavailable` in its place.
        public var httpAnswerTimeout: Duration = .seconds(120)

        public init(
            host: String = "127.0.0.1", port: Int = 8080, databasePath: String = "tablecast.db",
            synchronous: TableStoreOptions.Synchronous = .full, snapshotInterval: Int = 1000,
            historyLimit: Int = 10_000, policy: AccessPolicy = .open, allowAnonymous: Bool = false,
            allowedOrigins: [String] = [],
            staticFiles: StaticFiles? = nil, maxMessageBytes: Int = 1 << 20, maxBatchEntries: Int = 1000,
            intentsPerSecond: Int = 1000, maxConsecutiveBadMessages: Int = 100, maxConnections: Int = 10_000,
            maxQueuedBytes: Int = 8 << 20, maxQueuedMessages: Int = 16_384, refsPerClient: Int = 10_000,
            maxQueuedIntents: Int = 10_000, tls: ServerTLS? = nil,
            metricsFactory: any MetricsFactory = MetricsSystem.factory, metricsPage: (@Sendable () -> [UInt8])? = nil,
            perTableMetrics: Bool = false, endpointAccess: EndpointAccess = .everyone,
            handshakeTimeout: Duration = .seconds(5), maxHandshakesPerAddress: Int? = 256
        ) {
            self.metricsFactory = metricsFactory
            self.metricsPage = metricsPage
            self.perTableMetrics = perTableMetrics
            self.endpointAccess = endpointAccess
            self.tls = tls
            self.host = host
            self.port = port
            self.databasePath = databasePath
            self.synchronous = synchronous
            self.snapshotInterval = snapshotInterval
            self.historyLimit = historyLimit
            self.policy = policy
            self.allowAnonymous = allowAnonymous
            self.allowedOrigins = allowedOrigins
            self.staticFiles = staticFiles
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

        /// The origins of the server's own pages, served on `port`, by the names it is known to answer to.
        func ownOrigins(port: Int) -> [String] {
            var hosts = [host]
            if isLoopback { hosts += ["localhost", "127.0.0.1", "[::1]"] }
            // With TLS, pages come from https://; libwebsockets' client sends http:// whatever the scheme, and no
            // page can be served as http:// from a port that only speaks TLS, so that origin is as much our own.
            let schemes = tls == nil ? ["http"] : ["https", "http"]
            return schemes.flatMap { scheme in hosts.map { "\(scheme)://\($0):\(port)" } }
        }
    }
}

extension TableServer.Configuration {
    /// Whether ``databasePath`` names a PostgreSQL database (`postgresql://…` or `postgres://…`) rather than a file.
    public var isPostgres: Bool { StoreLocation(databasePath).isShared }
}
