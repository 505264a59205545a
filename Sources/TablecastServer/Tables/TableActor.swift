import DequeModule
import Synchronization
import TableModel
import TableStore
import TablecastProtocol
import WebSocketTransport

/// The authority over one table: it serializes the table's work, resolves intents with the pure ``TableEngine``,
/// persists them through the ``Committer`` and only then fans the update out and acknowledges.
///
/// Work arrives through ``enqueue(_:)`` into an ``Inbox``; one drain task per burst takes everything queued. The
/// actor is the state and the dispatch; the decisions are values of their own, each tested alone:
/// - ``CommitPipeline``: intents resolve into a pending group while at most one group is written; when it is
///   durable it is published and the next one written. Any other work waits until the pipeline is idle, so
///   catch-ups, presence and rule changes always see committed state only (`TableActor+Commits.swift`).
/// - ``IntentRef``: a retried intent is answered with its original ack, a reused ref refused.
/// - ``TableReplication`` and ``StoreWatermarks``: a table alone on its store, or one that follows, rebases and
///   reloads beside other nodes.
/// - ``CatchUpPlan`` and ``SnapshotSharing``: what a subscribe or refresh sends (`TableActor+CatchUp.swift`).
/// - ``PresencePacer``: when presence deltas go out.
actor TableActor {
    nonisolated let name: String
    nonisolated let epoch: Int64
    nonisolated let epochText: String
    let context: ServerContext
    let replication: TableReplication
    private nonisolated let inbox = Inbox<TableWork>()
    /// Work taken from the inbox and not done yet: what follows the first non-intent item waits for the commits
    /// before it.
    private var backlog = Deque<TableWork>()
    var pipeline: CommitPipeline
    /// The outcome of the group in flight, left here by the committer's thread. The actor looks at it between
    /// intents, so that a long burst of work does not keep the committer waiting for the next group.
    nonisolated let commitOutcome = Mutex<Result<Void, any Error>?>(nil)
    /// Version and subscriber count for `listTables`, readable without waiting for the actor.
    private nonisolated let status: Mutex<(version: UInt64, subscribers: Int)>
    nonisolated let watermarks: Mutex<StoreWatermarks>
    var engine: TableEngine
    var history: UpdateHistory
    /// The engine's history bytes as last counted in the update-history account (see ``accountMemory()``).
    private var accountedEngineBytes = 0
    var subscribers = SubscriberList()
    /// Subscribers have the board's published state; its news go out as one `presence` delta per burst of work,
    /// and at most one per ``presenceInterval``.
    var presence = PresenceBoard<PresenceMember>()
    var presencePacer = PresencePacer<ContinuousClock.Instant>(interval: TableActor.presenceInterval)
    /// Shared stores: who is on the table on the other nodes (on the board as `.remote` members), and what this
    /// node last shared of its own.
    var otherNodesPresence = OtherNodesPresence()
    var sharedPresence = ClusterPresence.Share()
    /// The shortest time between two `presence` messages of a table.
    static let presenceInterval = Duration.milliseconds(100)
    /// The newest snapshot built and the catch-ups waiting for one (see ``SnapshotSharing``).
    var snapshots = SnapshotSharing()
    /// How long a table keeps its shared snapshot; connections it was queued to keep it until it is written.
    static let snapshotLifetime = Duration.seconds(10)
    /// How soon a snapshot that could not be built (the snapshot account was full) is tried again.
    static let snapshotRetryInterval = Duration.milliseconds(100)
    var dropped = false
    /// Set when the table could not be reloaded after a failed commit: it then refuses work with `unavailable`.
    var broken: String?
    /// Intents queued and not yet taken up, for the bound on them (see ``enqueueIntent(_:ref:base:_:)``).
    private nonisolated let queuedIntents = Atomic<Int>(0)

    /// Who a presence entry is: a connection to this node, or an entry another node shares (by its key).
    enum PresenceMember: Hashable, Sendable {
        case local(WebSocketConnectionID)
        case remote(String)
    }

    init(name: String, epoch: Int64, engine: TableEngine, context: ServerContext) {
        self.name = name
        self.epoch = epoch
        self.epochText = Epoch.text(epoch)
        self.engine = engine
        self.context = context
        replication =
            context.isShared
            ? .shared(TableFollower(table: name, committer: context.committer, metrics: context.metrics)) : .local
        pipeline = CommitPipeline(recording: replication.recordsGroups)
        history = Self.emptyHistory(after: engine.table.version, context: context)
        status = Mutex((engine.table.version, 0))
        watermarks = Mutex(StoreWatermarks(at: engine.table.version))
    }

    static func emptyHistory(after version: UInt64, context: ServerContext) -> UpdateHistory {
        UpdateHistory(
            after: version, limit: context.historyLimit, byteLimit: context.historyBytes,
            account: context.budget[.updateHistory])
    }

    deinit {
        context.budget[.updateHistory].release(accountedEngineBytes)
    }

    // MARK: The mailbox

    /// Queues an intent unless `maxQueuedIntents` are already waiting; false when refused.
    nonisolated func enqueueIntent(_ requester: Requester, ref: String?, base: UInt64?, _ intent: Intent) -> Bool {
        guard queuedIntents.add(1, ordering: .relaxed).newValue <= context.maxQueuedIntents else {
            queuedIntents.subtract(1, ordering: .relaxed)
            return false
        }
        enqueue(.intent(requester, ref: ref, base: base, intent))
        return true
    }

    /// Queues work; starts a drain task only when the table was idle. Intents go through ``enqueueIntent(_:ref:base:_:)``.
    nonisolated func enqueue(_ work: TableWork) {
        if inbox.append(work) {
            context.tasks.spawn { await self.drain() }
        }
    }

    /// Queues `work` once `delay` has passed, unless the server shuts down first.
    nonisolated func enqueue(_ work: TableWork, after delay: Duration) {
        context.tasks.spawn { [self] in
            guard (try? await Task.sleep(for: delay)) != nil else { return }
            enqueue(work)
        }
    }

    /// Another node committed up to `version` in the shared store: catch up unless this node has it already or
    /// nobody here subscribes to the table (its intents, subscribes and refreshes follow first).
    nonisolated func followCommits(upTo version: UInt64?) {
        let watched = isWatched
        if watermarks.withLock({ $0.notified(upTo: version, watched: watched) }) {
            enqueue(.followStore(.commits(upTo: version)))
        }
    }

    /// Another node's presence on the table changed: read it when someone here sees it (a subscribe reads it).
    nonisolated func presenceChangedElsewhere() {
        if isWatched { enqueue(.followStore(.presence)) }
    }

    private nonisolated var isWatched: Bool { status.withLock { $0.subscribers } > 0 }

    /// The line of `tables` for this table.
    nonisolated var summary: ServerMessage.TableSummary {
        let (version, subscribers) = status.withLock { $0 }
        return .init(
            table: name, version: watermarks.withLock { $0.listed(version) }, epoch: epochText, subscribers: subscribers
        )
    }

    /// Publishes the committed version and the subscriber count for `listTables`. The version defaults to the
    /// engine's, which is the committed one whenever the pipeline is idle (all work but intents).
    func publishStatus(version: UInt64? = nil) {
        let version = version ?? engine.table.version
        let count = subscribers.count
        status.withLock { $0 = (version, count) }
    }

    // MARK: The drain

    private func drain() async {
        while let items = inbox.takeAll() {
            for item in items {
                if case .committed = item {
                    await finishCommitIfDone()
                } else {
                    backlog.append(item)
                }
            }
            await work()
            accountMemory()
            if presence.hasNews { broadcastPresenceWhenDue() }
        }
    }

    /// Does the backlog in order until it is empty or its next item must wait for a commit.
    private func work() async {
        while let item = backlog.first {
            await finishCommitIfDone()
            if case .intent(let requester, let ref, let base, let intent) = item {
                await context.waitForFanOutRoom()
                // Other nodes' commits not followed yet (nobody here subscribes): resolving on top of them spares
                // a conflict.
                if pipeline.isIdle, watermarks.withLock({ $0.isAhead(of: engine.table.version) }) {
                    await follow()
                }
                backlog.removeFirst()
                queuedIntents.subtract(1, ordering: .relaxed)
                await handleIntent(requester, ref: ref, base: base, intent)
                continue
            }
            submitPending()
            if pipeline.isWriting { return }
            backlog.removeFirst()
            await handle(item)
        }
        submitPending()
    }

    /// Counts what the engine's history grew or shrank by in the update-history account, and, when the account is
    /// over its share, gives back the oldest: first encoded updates (catch-ups then read the store's log), then
    /// rebase layouts (bases that old are then `stale`). Work only changes the engine, so once per burst of work
    /// keeps the count current.
    private func accountMemory() {
        let account = context.budget[.updateHistory]
        account.charge(engine.historyBytes - accountedEngineBytes)
        accountedEngineBytes = engine.historyBytes
        guard account.isOver else { return }
        account.degraded()
        let excess = account.excess
        let remaining = excess - history.shed(excess)
        guard remaining > 0 else { return }
        engine.trimHistory(toBytes: max(0, engine.historyBytes - remaining))
        account.release(accountedEngineBytes - engine.historyBytes)
        accountedEngineBytes = engine.historyBytes
    }

    // MARK: Dispatch

    private func handle(_ item: TableWork) async {
        switch item {
        case .intent:
            preconditionFailure("intents are handled by handleIntent")
        case .subscribe(let requester, let ref, let since, let epoch):
            await subscribe(requester, ref: ref, since: since, epoch: epoch)
        case .refresh(let requester, let ref, let since, let epoch):
            await refresh(requester, ref: ref, since: since, epoch: epoch)
        case .snapshotBuilt(let version, let rules, let message):
            snapshotBuilt(version: version, rules: rules, message)
        case .retrySnapshot:
            if snapshots.retryBuilding() { buildSnapshot() }
        case .snapshotExpired(let version):
            snapshots.expire(version: version)
        case .unsubscribe(let requester, let ref, let reason):
            snapshots.cancelSubscribe(of: requester.connection)
            removeSubscriber(requester.connection)
            context.send(.unsubscribed(ref: ref, table: name, reason: reason), to: requester.connection)
        case .disconnected(let connection):
            removeSubscriber(connection)
        case .presence(let requester, let ref, let change):
            changePresence(requester, ref: ref, change)
        case .setRules(let requester, let ref, let patch):
            if let refusal = unavailability { return refuse(requester, ref: ref, refusal) }
            await setRules(requester, ref: ref, patch)
        case .drop(let requester, let ref, let done):
            done.resume(returning: await drop(requester, ref: ref))
        case .barrier(let done):
            done.resume()
        case .committed:
            preconditionFailure("commit outcomes are taken by drain")
        case .followStore(let change):
            await follow(change)
        }
    }

    func refuse(_ requester: Requester, ref: String?, _ error: ProtocolError) {
        context.refuse(requester.connection, error, ref: ref)
    }

    /// Why the table refuses work now, if it does.
    var unavailability: ProtocolError? {
        if dropped { return ProtocolError(.noSuchTable, "table '\(name)' was dropped") }
        if let broken { return ProtocolError(.unavailable, broken) }
        return nil
    }

    /// Whether `requester`'s connection is still open; a catch-up queued for a closed one is dropped unbuilt.
    func isOpen(_ requester: Requester) -> Bool {
        guard context.isOpen(requester.connection) else {
            context.metrics.catchUpsDropped.increment()
            return false
        }
        return true
    }
}
