import Logging
import Prometheus
import TableModel
import TableStore
import TablecastProtocol
import WebSocketTransport

/// The Tablecast server: tables loaded from SQLite, one actor each, served over WebSocket with protocol v1.
///
/// ```swift
/// let server = try await TableServer.start(.init(port: 8080, databasePath: "tablecast.db"), logger: logger)
/// // … on SIGTERM:
/// await server.shutdown()
/// ```
public final class TableServer: Sendable {
    /// Why the server refused to start.
    public struct StartError: Error, CustomStringConvertible {
        public let description: String
    }

    /// The version `welcome` reports.
    public static let version = "1.0.0"

    /// The port the server listens on.
    public let port: Int
    private let context: ServerContext
    private let directory: TableDirectory
    private let events: AsyncStream<RouterEvent>.Continuation
    private let router: Task<Void, Never>

    private init(
        port: Int, context: ServerContext, directory: TableDirectory, events: AsyncStream<RouterEvent>.Continuation,
        router: Task<Void, Never>
    ) {
        self.port = port
        self.context = context
        self.directory = directory
        self.events = events
        self.router = router
    }

    /// Opens the database, loads every table (latest snapshot plus the log after it) and starts listening.
    ///
    /// Throws a `StoreError` when the database is not a Tablecast database, is corrupt, or cannot be opened (never
    /// replacing it with a new one), a ``StartError`` for an unsafe configuration, and the transport's error when
    /// the port cannot be bound.
    public static func start(_ configuration: Configuration, logger: Logger) async throws -> TableServer {
        if !configuration.isLoopback && !configuration.policy.requiresToken && !configuration.allowAnonymous {
            throw StartError(
                description: "refusing to listen on \(configuration.host) without a tokens file: everyone would be admin "
                    + "(give --tokens FILE, or --allow-anonymous to accept that)")
        }
        var options = TableStoreOptions()
        options.synchronous = configuration.synchronous
        options.snapshotInterval = Int64(configuration.snapshotInterval)
        options.retention = .versionsBeforeSnapshot(Int64(configuration.historyLimit))
        options.refsPerClient = Int64(configuration.refsPerClient)
        let store = try TableStore(path: configuration.databasePath, options: options)
        var engines: [(TableInfo, TableEngine)] = []
        for info in try store.listTables() {
            engines.append((info, try TableEngine(loaded: store.load(info.name), historyLimit: configuration.historyLimit)))
        }

        let registry = PrometheusCollectorRegistry()
        let metrics = ServerMetrics(registry: registry)
        let committer = Committer(store: store, logger: logger) { turn in
            metrics.commitGroupSize.record(Double(turn.records))
            metrics.commitSeconds.record(turn.duration)
        }
        let (stream, continuation) = AsyncStream.makeStream(of: RouterEvent.self)
        let transport: WebSocketServer
        do {
            transport = try WebSocketServer(
                configuration: .init(
                    host: configuration.host, port: configuration.port, subprotocols: ["tablecast.v1"],
                    maxMessageSize: configuration.maxMessageBytes, maxQueuedBytes: configuration.maxQueuedBytes,
                    maxQueuedMessages: configuration.maxQueuedMessages,
                    maxUnconsumedMessages: ConnectionRouter.maxUnconsumedMessages,
                    maxUnconsumedBytes: ConnectionRouter.maxUnconsumedBytes,
                    maxConnections: configuration.maxConnections, handshakeTimeout: configuration.handshakeTimeout,
                    maxHandshakesPerAddress: configuration.maxHandshakesPerAddress,
                    staticFilesDirectory: configuration.staticFilesDirectory, metricsRegistry: registry),
                logger: logger, onEvent: { continuation.yield(.transport($0)) })
        } catch {
            await committer.stop()
            throw error
        }
        let context = ServerContext(
            transport: transport, committer: committer, refs: RefRegistry(limit: configuration.refsPerClient),
            metrics: metrics, logger: logger, snapshotInterval: UInt64(max(1, configuration.snapshotInterval)),
            historyLimit: configuration.historyLimit, maxQueuedIntents: configuration.maxQueuedIntents)
        let actors = engines.map { info, engine in
            TableActor(name: info.name, epoch: info.epoch, engine: engine, context: context)
        }
        let directory = TableDirectory(context: context, loaded: actors)
        let port = transport.port
        let settings = ConnectionRouter.Settings(
            policy: configuration.policy,
            allowedOrigins: Set(configuration.allowedOrigins ?? configuration.ownOrigins(port: port)),
            limits: ProtocolLimits(maxBatchEntries: configuration.maxBatchEntries),
            intentsPerSecond: configuration.intentsPerSecond,
            maxConsecutiveBadMessages: configuration.maxConsecutiveBadMessages,
            maxMessageBytes: configuration.maxMessageBytes, serverVersion: version)
        let router = Task {
            await ConnectionRouter(context: context, directory: directory, settings: settings, events: continuation).run(stream)
        }
        logger.info(
            "serving",
            metadata: [
                "url": "ws://\(configuration.host):\(port)/", "database": "\(configuration.databasePath)",
                "tables": "\(actors.count)", "synchronous": "\(configuration.synchronous.rawValue)",
            ])
        return TableServer(port: port, context: context, directory: directory, events: continuation, router: router)
    }

    /// Graceful shutdown: stops taking requests, lets every table finish and acknowledge what it was given,
    /// flushes every connection's queue and closes it with 1001, then checkpoints the WAL and closes the database.
    public func shutdown() async {
        await withCheckedContinuation { events.yield(.stop($0)) }
        for actor in directory.all {
            await withCheckedContinuation { actor.enqueue(.barrier($0)) }
        }
        await context.transport.shutdown()
        events.finish()
        await router.value
        await context.committer.stop()
        context.logger.info("stopped")
    }
}
