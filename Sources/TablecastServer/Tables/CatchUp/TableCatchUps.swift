import TableModel
import TableStore
import TablecastProtocol
import WebSocketTransport

/// What a table keeps so that subscribes and refreshes find it current: its recent committed updates (see
/// ``UpdateHistory``) and a snapshot shared by the catch-ups that need one (see ``SnapshotSharing``), and how a
/// catch-up is sent as ``CatchUpPlan`` says. Owned by the table's actor, and used only on it; a snapshot is built
/// on another task, which reports back through the actor's mailbox.
final class TableCatchUps {
    /// How long a table keeps its shared snapshot; connections it was queued to keep it until it is written.
    static let snapshotLifetime = Duration.seconds(10)
    /// How soon a snapshot that could not be built (the snapshot account was full) is tried again.
    static let snapshotRetryInterval = Duration.milliseconds(100)

    private let table: String
    private let epoch: Int64
    private let epochText: String
    private let context: ServerContext
    private let stored: StoredTable
    private(set) var history: UpdateHistory
    private var snapshots = SnapshotSharing()
    /// The engine's history bytes as last counted in the update-history account (see ``account(_:)``).
    private var accountedEngineBytes = 0

    init(table: String, epoch: Int64, after version: UInt64, context: ServerContext) {
        self.table = table
        self.epoch = epoch
        epochText = Epoch.text(epoch)
        self.context = context
        stored = StoredTable(name: table, context: context)
        history = Self.emptyHistory(after: version, context: context)
    }

    deinit {
        context.budget[.updateHistory].release(accountedEngineBytes)
    }

    private static func emptyHistory(after version: UInt64, context: ServerContext) -> UpdateHistory {
        UpdateHistory(
            after: version, limit: context.historyLimit, byteLimit: context.historyBytes,
            account: context.budget[.updateHistory])
    }

    /// A committed update, kept for catch-ups and history. The caller sends it to the subscribers with the others
    /// of its group (see ``TableAudience/deliver(_:)``).
    func keep(_ update: WebSocketMessage, version: UInt64, time: Int64, originName: String, originUser: String) {
        history.append(update)
        context.recentChanges.append(
            table, epoch: epoch, version: version, time: time, originName: originName,
            originUser: originUser, update: update)
    }

    /// The table's state was replaced (a rebase or a failed group undone): the shared snapshot no longer holds.
    func forgetSnapshot() { snapshots.forget() }

    /// The table was read again from the store at `version`: nothing kept holds.
    func restart(after version: UInt64) {
        snapshots.forget()
        history = Self.emptyHistory(after: version, context: context)
    }

    /// Counts what the engine's history grew or shrank by in the update-history account, and, when the account is
    /// over its share, gives back the oldest: first encoded updates (catch-ups then read the store's log), then
    /// rebase layouts (bases that old are then `stale`). Work only changes the engine, so once per burst of work
    /// keeps the count current.
    func account(_ engine: inout TableEngine) {
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

    /// Whether `requester`'s connection is still open; a catch-up queued for a closed one is dropped unbuilt.
    func isOpen(_ requester: Requester) -> Bool {
        guard context.isOpen(requester.connection) else {
            context.metrics.catchUpsDropped.increment()
            return false
        }
        return true
    }

    // MARK: Catching up

    /// Brings `waiter` from `since` (in epoch `epoch`) to `table`'s version, the committed one, and answers it
    /// (see ``finish(_:table:audience:)``); or queues it behind a snapshot of the table when one must be built.
    nonisolated(nonsending) func catchUp(
        _ waiter: SnapshotSharing.Waiter, since: UInt64?, epoch: String?, table: Table, audience: TableAudience,
        for actor: TableActor
    ) async {
        guard await sendMissed(to: waiter.requester.connection, since: since, epoch: epoch, table: table) else {
            if snapshots.wait(waiter) { build(table, for: actor) }
            return
        }
        finish(waiter, table: table, audience: audience)
    }

    /// Sends what ``CatchUpPlan`` says: the missed updates from memory or the store's log, otherwise the shared
    /// snapshot. False when that snapshot must be built first (nothing was sent).
    nonisolated(nonsending) private func sendMissed(
        to connection: WebSocketConnectionID, since: UInt64?, epoch: String?, table: Table
    ) async -> Bool {
        let limit = context.catchUpLimit
        switch CatchUpPlan(since: since, epoch: epoch, current: table.version, tableEpoch: epochText, limit: limit) {
        case .upToDate:
            if since != nil { context.metrics.resumes.increment() }
            return true
        case .updates(let since):
            let missed: [WebSocketMessage]?
            if let kept = history.messages(after: since) {
                missed = Array(kept)
            } else {
                missed = await stored.updates(after: since, upTo: table.version)
            }
            if let missed, CatchUpPlan.fits(missed.map(\.count), limit) {
                for message in missed { context.transport.send(message, to: connection) }
                context.metrics.resumes.increment()
                return true
            }
        case .snapshot:
            break
        }
        guard let catchUp = fromSharedSnapshot(table) else { return false }
        for message in catchUp { context.transport.send(message, to: connection) }
        return true
    }

    /// Answers a catch-up whose snapshot or updates were sent: `subscribed` (and the subscription) or `refreshed`,
    /// carrying the presence every subscriber has now: the published state, written once for all who catch up
    /// until the next delta.
    private func finish(_ waiter: SnapshotSharing.Waiter, table: Table, audience: TableAudience) {
        let status = ServerMessage.TableStatus(
            table: self.table, version: table.version, epoch: epochText, rules: table.rules)
        let text = status.encoded(
            type: waiter.subscribing ? "subscribed" : "refreshed", ref: waiter.ref, you: waiter.requester.presenceKey,
            sharedPresence: audience.publishedStateJSON())
        context.transport.send(WebSocketMessage(kind: .text, bytes: text), to: waiter.requester.connection)
        if waiter.subscribing { audience.join(waiter.requester) }
    }

    // MARK: Shared snapshots

    /// Builds a snapshot of the committed `table` on another task, so that the table's writers do not wait for
    /// it. While the memory budget's snapshot account is over its share (snapshots still queued to slow readers),
    /// the build waits and is tried again: joiners wait rather than the server grow.
    private func build(_ table: Table, for actor: TableActor) {
        let account = context.budget[.snapshots]
        guard !account.isOver else {
            account.degraded()
            return actor.enqueue(.retrySnapshot, after: Self.snapshotRetryInterval)
        }
        let (name, epoch) = (self.table, epochText)
        context.tasks.spawn {
            let snapshot = ServerMessage.snapshot(
                table: name, version: table.version, epoch: epoch, rules: table.rules, sections: table.sections)
            let message = WebSocketMessage(kind: .text, bytes: snapshot.encoded)
            message.charge(to: account)
            actor.enqueue(.snapshotBuilt(version: table.version, rules: table.rules, message))
        }
    }

    /// The wait for memory is over: builds the snapshot the waiting catch-ups need.
    func retryBuilding(_ table: Table, for actor: TableActor) {
        if snapshots.retryBuilding() { build(table, for: actor) }
    }

    /// The snapshot of the committed `table`, built now and shared with the catch-ups that follow.
    func share(_ table: Table, for actor: TableActor) -> WebSocketMessage {
        let snapshot = ServerMessage.snapshot(
            table: self.table, version: table.version, epoch: epochText, rules: table.rules, sections: table.sections)
        let message = WebSocketMessage(kind: .text, bytes: snapshot.encoded)
        message.charge(to: context.budget[.snapshots])
        context.metrics.snapshotsEncoded.increment()
        snapshots.share(.init(version: table.version, rules: table.rules, message: message))
        actor.enqueue(.snapshotExpired(version: table.version), after: Self.snapshotLifetime)
        return message
    }

    /// A snapshot is ready: it becomes the shared one, and each waiter still connected gets it, the updates
    /// committed since (or, when they are too many, waits for a newer snapshot) and its answer; or `refusal`, when
    /// the table refuses work now.
    func built(
        _ snapshot: SnapshotSharing.Snapshot, table: Table, refusal: ProtocolError?, audience: TableAudience,
        for actor: TableActor
    ) {
        context.metrics.snapshotsEncoded.increment()
        let waiters = snapshots.built(snapshot)
        actor.enqueue(.snapshotExpired(version: snapshot.version), after: Self.snapshotLifetime)
        let catchUp = fromSharedSnapshot(table)
        for waiter in waiters where isOpen(waiter.requester) {
            if let refusal {
                context.refuse(waiter.requester.connection, refusal, ref: waiter.ref)
                continue
            }
            guard let catchUp else {
                snapshots.requeue(waiter)
                continue
            }
            for message in catchUp { context.transport.send(message, to: waiter.requester.connection) }
            finish(waiter, table: table, audience: audience)
        }
        if snapshots.startBuilding() { build(table, for: actor) }
    }

    /// Lets go of the shared snapshot of `version`, kept long enough.
    func expire(version: UInt64) { snapshots.expire(version: version) }

    /// `connection` no longer waits for a snapshot to subscribe.
    func cancelSubscribe(of connection: WebSocketConnectionID) { snapshots.cancelSubscribe(of: connection) }

    /// The shared snapshot followed by the updates committed after it, when they are all kept and fit the catch-up
    /// bound and the rules have not changed since; nil when a newer snapshot is needed.
    private func fromSharedSnapshot(_ table: Table) -> [WebSocketMessage]? {
        snapshots.catchUp(version: table.version, rules: table.rules, history: history, limit: context.catchUpLimit)
    }
}
