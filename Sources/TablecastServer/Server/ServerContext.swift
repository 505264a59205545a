import Foundation
import Logging
import MemoryBudget
import Synchronization
import TableModel
import TablecastProtocol
import WebSocketTransport

/// What every table actor and the connection router share: the transport, the committer and the settings.
final class ServerContext: Sendable {
    let transport: WebSocketServer
    let committer: Committer
    /// Answers history requests beside the committer.
    let history: HistoryReader
    let refs: RefRegistry
    let metrics: ServerMetrics
    let logger: Logger
    /// Whether the store answers.
    let health: StoreHealth
    /// Logs failures that repeat (a store outage) once per cause per interval, with a count.
    let failures: FailureLog
    /// Every unstructured task the server starts, awaited at shutdown.
    let tasks: ServerTasks
    /// The latest changes of every table, for `history` while the store cannot be read.
    let recentChanges: RecentChanges
    /// A snapshot is stored with every version that is a multiple of this.
    let snapshotInterval: UInt64
    /// Committed batches kept per table for rebasing stale intents and catch-up.
    let historyLimit: Int
    /// The most bytes one table's kept updates (and, apart, its rebase layouts) may take.
    let historyBytes: Int
    /// The memory budget histories, snapshots, replies and queues draw from.
    let budget: MemoryBudget
    /// Intents a table may have waiting to be resolved.
    let maxQueuedIntents: Int
    /// Other nodes commit to the same store (PostgreSQL): tables follow its log and rebase on conflicts.
    let isShared: Bool
    /// Presence shared with the other nodes; nil without a shared store.
    let clusterPresence: ClusterPresence?
    /// The most a resume may send as missed updates: half a connection's outbound bound, so that the catch-up
    /// and the live messages behind it fit. A bigger one is a snapshot instead.
    let catchUpLimit: CatchUpLimit

    /// Connections open now (the router keeps it), so that tables drop work queued for one that has closed.
    private let open = Mutex<Set<WebSocketConnectionID>>([])

    /// Whether `connection` is still open.
    func isOpen(_ connection: WebSocketConnectionID) -> Bool { open.withLock { $0.contains(connection) } }

    /// Records that `connection` opened (true) or closed (false).
    func setOpen(_ connection: WebSocketConnectionID, _ isOpen: Bool) {
        open.withLock { if isOpen { $0.insert(connection) } else { $0.remove(connection) } }
    }

    struct CatchUpLimit {
        var messages: Int
        var bytes: Int
    }

    init(
        transport: WebSocketServer, committer: Committer, history: HistoryReader, refs: RefRegistry,
        metrics: ServerMetrics,
        logger: Logger, failures: FailureLog, tasks: ServerTasks, health: StoreHealth, snapshotInterval: UInt64,
        historyLimit: Int,
        historyBytes: Int,
        budget: MemoryBudget, maxQueuedIntents: Int, catchUpLimit: CatchUpLimit, isShared: Bool = false,
        clusterPresence: ClusterPresence? = nil
    ) {
        self.historyBytes = historyBytes
        self.budget = budget
        recentChanges = RecentChanges(account: budget[.updateHistory])
        self.isShared = isShared
        self.clusterPresence = clusterPresence
        self.transport = transport
        self.committer = committer
        self.history = history
        self.refs = refs
        self.metrics = metrics
        self.logger = logger
        self.health = health
        self.failures = failures
        self.tasks = tasks
        self.snapshotInterval = snapshotInterval
        self.historyLimit = historyLimit
        self.maxQueuedIntents = maxQueuedIntents
        self.catchUpLimit = catchUpLimit
    }

    /// A new engine for `table`, with this server's history bounds.
    func engine(for table: Table) -> TableEngine {
        TableEngine(table: table, historyLimit: historyLimit, historyByteLimit: historyBytes)
    }

    /// Encodes `message` once and queues it for `connection`.
    func send(_ message: ServerMessage, to connection: WebSocketConnectionID) {
        transport.send(WebSocketMessage(kind: .text, bytes: message.encoded), to: connection)
    }

    /// Encodes `message` once and queues the same buffer for every one of `connections`.
    func send(_ message: ServerMessage, to connections: [WebSocketConnectionID]) {
        guard !connections.isEmpty else { return }
        transport.send(WebSocketMessage(kind: .text, bytes: message.encoded), to: connections)
    }

    /// Returns once the fan-out has room for more updates (see ``FanOutPacing``); at once, mostly.
    func waitForFanOutRoom() async {
        guard var pacing = FanOutPacing(backlog: transport.outboundBacklog, connections: transport.connectionCount)
        else { return }
        metrics.fanOutWaits.increment()
        let interval = Duration.milliseconds(1)
        repeat {
            // The server is shutting down: the intent goes on, its commit is awaited.
            guard (try? await Task.sleep(for: interval)) != nil else { return }
        } while pacing.keepWaiting(backlog: transport.outboundBacklog, after: interval)
    }

    /// The one way a store failure reaches a client: logs `error` in full (once per cause per interval, see
    /// ``FailureLog``) and returns `unavailable` with a message that says what could not be done and why in plain
    /// words (no path, SQL or library text) and the incident id that finds the log's lines.
    func unavailable(
        _ what: String, _ error: any Error, table: String? = nil, level: Logger.Level = .error
    ) -> ProtocolError {
        ProtocolError.unavailable(what, error, incident: logFailure(what, error, table: table, level: level))
    }

    /// Counts a store failure and logs it once per cause per interval; returns its incident id.
    @discardableResult
    func logFailure(
        _ what: String, _ error: any Error, table: String? = nil, level: Logger.Level = .error,
        metadata extra: Logger.Metadata = [:]
    ) -> String {
        metrics.storeFailures.increment()
        var metadata = extra.merging(["error": "\(error)"]) { $1 }
        if let table { metadata["table"] = "\(table)" }
        return failures.log(level, what, cause: ProtocolError.reason(error), metadata: metadata)
    }

    /// Answers the request `ref` on `connection` with `error`.
    func refuse(_ connection: WebSocketConnectionID, _ error: ProtocolError, ref: String?) {
        var error = error
        error.ref = ref
        send(.error(error), to: connection)
    }

    /// Milliseconds since the Unix epoch, for the log's times.
    static func now() -> Int64 {
        Int64(Date().timeIntervalSince1970 * 1000)
    }
}
