import CoreMetrics
import Logging
import MemoryBudget
import ServiceLifecycle
import Synchronization
import TableModel
import TableStore
import TablecastProtocol
import WebSocketTransport

/// The Tablecast server: tables loaded from the store, one actor each, served over WebSocket with protocol v1.
///
/// ``start(_:logger:)`` opens the store and starts listening. The server is a `Service`: run it in a
/// `ServiceGroup`, which stops it gracefully on SIGTERM or SIGINT (see ``run()``), or stop it with ``shutdown()``.
///
/// ```swift
/// let server = try await TableServer.start(.init(port: 8080, databasePath: "tablecast.db"), logger: logger)
/// try await ServiceGroup(services: [server], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger).run()
/// ```
public final class TableServer: Service {
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
    /// Follows the other nodes on a shared store; nil with SQLite.
    private let follower: ClusterFollower?
    private let events: RouterEvents
    private let router: Task<Void, Never>
    /// Keeps a second server (or `compact`) off the database file while this one runs; nil with PostgreSQL.
    private let lock: DatabaseLock?
    /// The parts already stopped, so that ``run()``'s graceful shutdown and ``shutdown()`` stop each once.
    private let stopped = Mutex<Set<Part>>([])

    /// The server's parts, in the order they start; they stop in the reverse order.
    private enum Part: String, CaseIterable {
        case committer = "committer"
        case historyReaders = "history readers"
        case otherNodes = "other nodes"
        case connections = "connections"
    }

    private init(
        port: Int, context: ServerContext, directory: TableDirectory, follower: ClusterFollower?,
        events: RouterEvents, router: Task<Void, Never>, lock: DatabaseLock?
    ) {
        self.lock = lock
        self.port = port
        self.context = context
        self.directory = directory
        self.follower = follower
        self.events = events
        self.router = router
    }

    /// Opens the database, loads every table (latest snapshot plus the log after it) and starts listening.
    ///
    /// Throws a `StoreError` when the database is not a Tablecast database, is corrupt, or cannot be opened (never
    /// replacing it with a new one), a `DatabaseLock.Failure` when another process holds the file (or its lock
    /// file cannot be created), a ``StartError`` for an unsafe configuration, and the transport's error when the
    /// port cannot be bound.
    public static func start(_ configuration: Configuration, logger: Logger) async throws -> TableServer {
        if !configuration.isLoopback && !configuration.policy.requiresToken && !configuration.allowAnonymous {
            throw StartError(
                description:
                    "refusing to listen on \(configuration.host) without a tokens file or signed-token keys: everyone "
                    + "would be admin (give --tokens FILE, --jwt-secret-file or --jwt-public-key, or --allow-anonymous "
                    + "to accept that)")
        }
        var options = TableStoreOptions()
        options.synchronous = configuration.synchronous
        options.snapshotInterval = Int64(configuration.snapshotInterval)
        options.retention = .versionsBeforeSnapshot(Int64(configuration.historyLimit))
        options.refsPerClient = Int64(configuration.refsPerClient)
        options.history = configuration.historyRetention
        // A port in use is found before the database file is created or opened.
        try WebSocketServer.checkListenAddress(host: configuration.host, port: configuration.port)
        // PostgreSQL is shared by design; a SQLite file has one server at a time.
        let lock = configuration.isPostgres ? nil : try DatabaseLock(database: configuration.databasePath)
        let store = try openStore(StoreLocation(configuration.databasePath), options: options)
        var engines: [(TableInfo, TableEngine)] = []
        for info in try store.listTables() {
            engines.append(
                (
                    info,
                    try TableEngine(
                        loading: info.name, from: store, historyLimit: configuration.historyLimit,
                        historyByteLimit: configuration.historyBytes)
                ))
        }

        let metrics = ServerMetrics(factory: configuration.metricsFactory, perTable: configuration.perTableMetrics)
        let budget = MemoryBudget(limit: configuration.memoryLimit)
        let memoryMetrics = MemoryMetrics(budget: budget, factory: configuration.metricsFactory)
        let metricsPage = configuration.metricsPage.map { page in
            { @Sendable in
                memoryMetrics.update()
                return page()
            }
        }
        let health = StoreHealth(factory: configuration.metricsFactory)
        let committer = Committer(
            store: store, logger: logger, health: health, debugDelay: configuration.debugCommitDelay
        ) { turn in
            metrics.commitGroupSize.record(turn.records)
            let (seconds, attoseconds) = turn.duration.components
            metrics.commitSeconds.recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
        }
        let events = RouterEvents()
        // The port is known once the transport listens: the gateway reads the origins through it.
        let origins = Mutex<OriginPolicy?>(nil)
        let gateway = HTTPGateway(
            router: events, origins: { origins.withLock { $0 } }, openAPIDocument: configuration.openAPIDocument,
            openAPISchemas: configuration.openAPISchemas, requestsPerSecond: configuration.intentsPerSecond,
            factory: configuration.metricsFactory)
        let transport: WebSocketServer
        do {
            var transportConfiguration = WebSocketServer.Configuration(
                host: configuration.host, port: configuration.port, subprotocols: ["tablecast.v1"],
                maxMessageSize: configuration.maxMessageBytes, maxQueuedBytes: configuration.maxQueuedBytes,
                maxQueuedMessages: configuration.maxQueuedMessages,
                maxUnconsumedMessages: ConnectionRouter.maxUnconsumedMessages,
                maxUnconsumedBytes: ConnectionRouter.maxUnconsumedBytes,
                maxConnections: configuration.maxConnections, handshakeTimeout: configuration.handshakeTimeout,
                maxHandshakesPerAddress: configuration.maxHandshakesPerAddress,
                staticFiles: configuration.staticFiles,
                metricsFactory: configuration.metricsFactory, metricsPage: metricsPage,
                endpointAccess: configuration.endpointAccess, tls: configuration.tls,
                healthStatus: { health.status },
                memoryBudget: budget)
            let answerTimeout = configuration.httpAnswerTimeout
            transportConfiguration.api = HTTPAPI(
                prefix: APIRoute.prefix, maxBodyBytes: configuration.maxMessageBytes,
                heartbeat: configuration.eventStreamHeartbeat, answerTimeout: answerTimeout,
                timeoutReply: { gateway.timeoutReply($0, after: answerTimeout) }, onEvent: gateway.handle)
            transport = try WebSocketServer(
                configuration: transportConfiguration, logger: logger,
                onEvent: { events.yield(.transport($0)) })
            gateway.attach(transport)
        } catch {
            await committer.stop()
            throw error
        }
        let limits = ProtocolLimits(maxBatchEntries: configuration.maxBatchEntries)
        let tasks = ServerTasks()
        let failures = FailureLog(logger: logger, tasks: tasks)
        let context = ServerContext(
            transport: transport, committer: committer,
            history: HistoryReader(
                database: configuration.databasePath, limits: limits, account: budget[.historyReplies],
                snapshotAccount: budget[.snapshots], failures: failures),
            refs: RefRegistry(limit: configuration.refsPerClient), metrics: metrics, logger: logger, failures: failures,
            tasks: tasks, health: health,
            snapshotInterval: UInt64(max(1, configuration.snapshotInterval)), historyLimit: configuration.historyLimit,
            historyBytes: configuration.historyBytes, budget: budget, maxQueuedIntents: configuration.maxQueuedIntents,
            catchUpLimit: .init(
                messages: configuration.maxQueuedMessages / 2, bytes: configuration.maxQueuedBytes / 2),
            isShared: configuration.isPostgres,
            clusterPresence: configuration.isPostgres
                ? ClusterPresence(url: configuration.databasePath, logger: logger, tasks: tasks) : nil)
        let actors = engines.map { info, engine in
            TableActor(name: info.name, epoch: info.epoch, engine: engine, context: context)
        }
        let directory = TableDirectory(context: context, loaded: actors)
        let follower =
            configuration.isPostgres
            ? ClusterFollower(
                url: configuration.databasePath, directory: directory, health: health, logger: logger, tasks: tasks)
            : nil
        let port = transport.port
        let originPolicy = OriginPolicy(
            listed: configuration.ownOrigins(port: port) + configuration.allowedOrigins,
            loopbackOnly: configuration.isLoopback)
        origins.withLock { $0 = originPolicy }
        let settings = ConnectionRouter.Settings(
            policy: configuration.policy,
            origins: originPolicy,
            limits: limits,
            intentsPerSecond: configuration.intentsPerSecond,
            maxConsecutiveBadMessages: configuration.maxConsecutiveBadMessages,
            maxMessageBytes: configuration.maxMessageBytes, serverVersion: version)
        let router = Task {
            await ConnectionRouter(context: context, directory: directory, settings: settings, events: events).run()
        }
        var serving: Logger.Metadata = [
            "url": "\(configuration.tls == nil ? "ws" : "wss")://\(configuration.host):\(port)/",
            "database": "\(store.location)",
            "tables": .stringConvertible(actors.count), "memory_limit": "\(MemorySize.text(budget.limit))",
        ]
        // SQLite's PRAGMA synchronous: PostgreSQL's durability is its own server's setting.
        if !configuration.isPostgres { serving["synchronous"] = "\(configuration.synchronous.rawValue)" }
        logger.info("serving", metadata: serving)
        return TableServer(
            port: port, context: context, directory: directory, follower: follower, events: events,
            router: router,
            lock: lock)
    }

    /// Loads the TLS certificate and key again from their files (after a renewal) for new connections; open
    /// connections keep theirs. Throws, keeping the current pair, when the new one is unreadable or mismatched.
    public func reloadCertificates() async throws {
        try await context.transport.reloadCertificates()
    }

    /// Puts `policy` in force (the tokens file or the signed tokens' keys were read again): every open connection's
    /// token is checked again, its new grants apply at once (a subscription to a table it may no longer read ends),
    /// and a connection whose token is no longer valid (gone from the tokens file, revoked) is closed with 4001.
    /// Returns how many connections were closed.
    @discardableResult
    public func replacePolicy(_ policy: AccessPolicy) async -> Int {
        await withCheckedContinuation { done in
            // After shutdown there is no connection left to check.
            if !events.yield(.policy(policy, done)) { done.resume(returning: 0) }
        }
    }

    /// Runs until graceful shutdown (SIGTERM or SIGINT, when its `ServiceGroup` traps them), then stops as
    /// ``shutdown()`` does. Its parts are services of a group of their own, started in order (the committer, the
    /// history readers, the other nodes' follower and presence, the connections) and stopped in the reverse one.
    public func run() async throws {
        let parts = Part.allCases.filter { $0 != .otherNodes || context.isShared }.map { part in
            ServiceGroupConfiguration.ServiceConfiguration(
                service: ServerPart(name: part.rawValue) { await self.stop(part) })
        }
        try await ServiceGroup(configuration: .init(services: parts, logger: context.logger)).run()
    }

    /// Graceful shutdown: stops taking requests, lets every table finish and acknowledge what it was given,
    /// flushes every connection's queue and closes it with 1001, stops following other nodes, ends the history
    /// readers and every task the server started, then checkpoints the WAL and closes the database.
    public func shutdown() async {
        for part in Part.allCases.reversed() { await stop(part) }
    }

    private func stop(_ part: Part) async {
        guard stopped.withLock({ $0.insert(part).inserted }) else { return }
        switch part {
        case .connections:
            await withCheckedContinuation { events.yield(.stop($0)) }
            for actor in directory.all {
                await withCheckedContinuation { actor.enqueue(.barrier($0)) }
            }
            await context.transport.shutdown()
            events.finish()
            await router.value
        case .otherNodes:
            follower?.stop()
            context.clusterPresence?.stop()
        case .historyReaders:
            await context.history.stop()
        case .committer:
            // The tasks may still be using the store: the committer outlives them.
            await context.tasks.cancelAll()
            await context.committer.stop()
            lock?.release()
            context.logger.info("stopped")
        }
    }
}

/// One part of the server as a service: it runs from the server's start and stops on graceful shutdown.
private struct ServerPart: Service, CustomStringConvertible {
    let name: String
    let stop: @Sendable () async -> Void

    var description: String { name }

    func run() async throws {
        // Cancelled rather than shut down gracefully (another part failed): it stops all the same.
        try? await gracefulShutdown()
        await stop()
    }
}
