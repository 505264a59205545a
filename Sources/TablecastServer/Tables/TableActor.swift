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
/// actor is the state, the drain and the dispatch; each job is a part of its own:
/// - ``TableCommits``: the engine and the I/O of the pure ``CommitPipeline`` (intents resolve into a pending group
///   while at most one group is written; when it is durable it is published and the next one written) and of
///   ``IntentRef`` (a retried intent is answered with its original ack, a reused ref refused). Any other work
///   waits until the pipeline is idle, so catch-ups, presence and rule changes always see committed state only.
/// - ``TableCatchUps``: what subscribes and refreshes are sent (``CatchUpPlan``, ``SnapshotSharing``).
/// - ``TableAudience``: the subscribers and presence (``PresenceBoard``, ``PresencePacer``).
/// - ``TableReplication`` and ``StoreWatermarks``: a table alone on its store, or one that follows, rebases and
///   reloads beside other nodes; ``StoredTable``: what the actor reads and writes in the store besides commits.
actor TableActor {
    nonisolated let name: String
    nonisolated let epoch: Int64
    nonisolated let epochText: String
    let context: ServerContext
    let replication: TableReplication
    private let stored: StoredTable
    private nonisolated let inbox = Inbox<TableWork>()
    /// Work taken from the inbox and not done yet: what follows the first non-intent item waits for the commits
    /// before it.
    private var backlog = Deque<TableWork>()
    /// Intents queued and not yet taken up, for the bound on them (see ``enqueueIntent(_:ref:base:_:)``).
    private nonisolated let queuedIntents = Atomic<Int>(0)
    /// The outcome of the group in flight, left here by the committer's thread. The actor looks at it between
    /// intents, so that a long burst of work does not keep the committer waiting for the next group.
    nonisolated let commitOutcome = Mutex<Result<Void, any Error>?>(nil)
    nonisolated let listing: TableListing
    nonisolated let watermarks: Mutex<StoreWatermarks>
    private let commits: TableCommits
    private let catchUps: TableCatchUps
    private let audience: TableAudience
    private var dropped = false

    init(name: String, epoch: Int64, engine: TableEngine, context: ServerContext) {
        self.name = name
        self.epoch = epoch
        self.epochText = Epoch.text(epoch)
        self.context = context
        replication =
            context.isShared
            ? .shared(TableFollower(table: name, committer: context.committer, metrics: context.metrics)) : .local
        stored = StoredTable(name: name, context: context)
        commits = TableCommits(
            name: name, epoch: epoch, engine: engine, recording: replication.recordsGroups, context: context)
        catchUps = TableCatchUps(table: name, epoch: epoch, after: engine.table.version, context: context)
        audience = TableAudience(table: name, context: context)
        listing = TableListing(version: engine.table.version)
        watermarks = Mutex(StoreWatermarks(at: engine.table.version))
    }

    /// The table as resolved so far: the committed one whenever the pipeline is idle (all work but intents).
    private var table: Table { commits.engine.table }

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

    private nonisolated var isWatched: Bool { listing.current.subscribers > 0 }

    /// The line of `tables` for this table.
    nonisolated var summary: ServerMessage.TableSummary {
        let (version, subscribers) = listing.current
        return .init(
            table: name, version: watermarks.withLock { $0.listed(version) }, epoch: epochText, subscribers: subscribers
        )
    }

    /// Publishes the committed version (by default the engine's, committed whenever the pipeline is idle) and the
    /// subscriber count for `listTables`.
    private func publishStatus(version: UInt64? = nil) {
        listing.set(version: version ?? table.version, subscribers: audience.subscribers.count)
    }

    // MARK: The drain

    private func drain() async {
        while var items = inbox.takeAll() {
            while let item = items.popFirst() {
                // Consumed: switching over the item as a value copied it whole (an intent with its requester).
                switch consume item {
                case .committed: await finishCommitIfDone()
                case .presenceDue: audience.presenceDue()
                case let other: backlog.append(other)
                }
            }
            await work()
            catchUps.account(&commits.engine)
            if audience.hasNews, let delay = audience.broadcastWhenDue() { enqueue(.presenceDue, after: delay) }
        }
    }

    /// Does the backlog in order until it is empty or its next item must wait for a commit.
    private func work() async {
        // Taken out of the backlog, not read at its head (which copied each item whole), and consumed: the intent's
        // parts move into its source. Only this loop reads the backlog, so an item out of it while the loop awaits
        // keeps its place; one that must wait for a commit goes back.
        while let item = backlog.popFirst() {
            await finishCommitIfDone()
            switch consume item {
            case .intent(let requester, let ref, let base, let intent):
                await context.waitForFanOutRoom()
                // Other nodes' commits not followed yet (nobody here subscribes): resolving on top of them spares
                // a conflict.
                if commits.pipeline.isIdle, watermarks.withLock({ $0.isAhead(of: table.version) }) {
                    await follow()
                }
                queuedIntents.subtract(1, ordering: .relaxed)
                await handleIntent(.init(requester: requester, ref: ref, base: base, intent: intent))
            case let other:
                commits.submitPending(for: self, publishingTo: audience, catchUps)
                if commits.pipeline.isWriting {
                    backlog.prepend(other)
                    return
                }
                await handle(other)
            }
        }
        commits.submitPending(for: self, publishingTo: audience, catchUps)
    }

    // MARK: Dispatch

    private func handle(_ item: TableWork) async {
        switch item {
        case .subscribe(let requester, let ref, let since, let epoch):
            await catchUp(.init(requester: requester, ref: ref, subscribing: true), since: since, epoch: epoch)
        case .refresh(let requester, let ref, let since, let epoch):
            await catchUp(.init(requester: requester, ref: ref, subscribing: false), since: since, epoch: epoch)
        case .snapshotBuilt(let version, let rules, let message):
            catchUps.built(
                .init(version: version, rules: rules, message: message), table: table, refusal: unavailability,
                audience: audience, for: self)
            publishStatus()
        case .retrySnapshot:
            catchUps.retryBuilding(table, for: self)
        case .snapshotExpired(let version):
            catchUps.expire(version: version)
        case .unsubscribe(let requester, let ref, let reason):
            catchUps.cancelSubscribe(of: requester.connection)
            removeSubscriber(requester.connection)
            context.send(.unsubscribed(ref: ref, table: name, reason: reason), to: requester.connection)
        case .disconnected(let connection):
            removeSubscriber(connection)
        case .presence(let requester, let ref, let change):
            do throws(ProtocolError) {
                if let refusal = unavailability { throw refusal }
                try audience.change(requester, change)
            } catch {
                refuse(requester, ref: ref, error)
            }
        case .renamed(let requester):
            audience.rename(requester)
        case .setRules(let requester, let ref, let patch):
            await setRules(requester, ref: ref, patch)
        case .drop(let requester, let ref, let done):
            done.resume(returning: await drop(requester, ref: ref))
        case .barrier(let done):
            done.resume()
        case .followStore(let change):
            await follow(change)
        case .intent, .committed, .presenceDue:
            preconditionFailure("taken by drain and work")
        }
    }

    private func refuse(_ requester: Requester, ref: String?, _ error: ProtocolError) {
        context.refuse(requester.connection, error, ref: ref)
    }

    /// Why the table refuses work now, if it does.
    private var unavailability: ProtocolError? {
        if dropped { return ProtocolError(.noSuchTable, "table '\(name)' was dropped") }
        if let broken = commits.broken { return ProtocolError(.unavailable, broken) }
        return nil
    }

    private func removeSubscriber(_ connection: WebSocketConnectionID) {
        if audience.leave(connection) { publishStatus() }
    }

    // MARK: Intents and commits

    private func handleIntent(_ source: PendingGroup.Source, checkStore: Bool = false) async {
        if commits.broken != nil { await reload() }
        if let refusal = unavailability {
            return commits.refuse(source, refusal, counted: refusal.code == .unavailable ? .unavailable : .rejected)
        }
        await commits.take(source, checkStore: checkStore, audience: audience)
    }

    /// Finishes the group in flight if the committer is done with it.
    private func finishCommitIfDone() async {
        guard commits.pipeline.isWriting, let outcome = commitOutcome.withLock({ $0.take() }) else { return }
        for followup in commits.finish(outcome, for: self, publishingTo: audience, catchUps) {
            switch followup {
            case .rebase(let sources, let checkingRefs): await rebase(sources, checkingRefs: checkingRefs)
            case .undone:
                catchUps.forgetSnapshot()
                publishStatus()
            case .reload: await reload()
            }
        }
    }

    /// Another node committed first (or stored a ref of the group: a retry it took): nothing was stored, and the
    /// engine is back before the group. Follow the other nodes' commits and resolve every intent of the group
    /// again: a stale intent is rebased as any other. They go out with the next group.
    private func rebase(_ sources: [PendingGroup.Source], checkingRefs: Bool) async {
        catchUps.forgetSnapshot()
        // The store reserved the table for the rebased group: with nothing to commit, other nodes need not wait.
        defer { if commits.pipeline.pending.records.isEmpty { context.committer.release(name) } }
        guard await follow() else {
            let refusal = ProtocolError(.unavailable, "the change could not be stored, nothing was applied")
            for source in sources { commits.refuse(source, refusal, counted: .unavailable) }
            return
        }
        for source in sources { await handleIntent(source, checkStore: checkingRefs) }
    }

    // MARK: Subscribers

    /// A subscribe or refresh: sent what it missed and answered (see ``TableCatchUps``).
    private func catchUp(_ waiter: SnapshotSharing.Waiter, since: UInt64?, epoch: String?) async {
        guard catchUps.isOpen(waiter.requester) else { return }
        if waiter.subscribing, commits.broken != nil { await reload() }
        if let refusal = unavailability { return refuse(waiter.requester, ref: waiter.ref, refusal) }
        // A table nobody here watched may have missed who is on it elsewhere.
        if waiter.subscribing, audience.isEmpty { await audience.followOtherNodes() }
        // With a shared store, what another node acknowledged a moment ago may not have been followed yet: read it
        // first, so a client that saw an ack from one node finds the change on every other. Not while the store is
        // down: the catch-up would wait for it in vain.
        if context.health.isUp { await follow() }
        await catchUps.catchUp(waiter, since: since, epoch: epoch, table: table, audience: audience, for: self)
        publishStatus()
    }

    // MARK: Replication

    /// Follows other nodes' commits (see ``TableCommits/follow(_:_:for:)``).
    @discardableResult
    private func follow() async -> Bool { await commits.follow(catchUps, audience, for: self) }

    private func reload() async { await commits.reload(catchUps, audience, for: self) }

    /// What another node did: nothing is in flight or pending here (this is not an intent), so the engine is at
    /// the committed version.
    private func follow(_ change: TableWork.StoreChange) async {
        guard !dropped else { return }
        switch change {
        case .commits(let version):
            if let version, version <= table.version { return }
            await follow()
        case .rules:
            // A failed read was logged; the next change of the rules, or a reload, brings them.
            guard let rules = await stored.rules(), rules != table.rules else { return }
            commits.engine.setRules(rules)
            audience.send(.rules(table: name, rules: rules))
        case .dropped:
            forgetAfterDrop()
        case .presence:
            await audience.followOtherNodes()
        }
    }

    // MARK: Rules and drop

    private func setRules(_ requester: Requester, ref: String?, _ patch: RulesPatch) async {
        if let refusal = unavailability { return refuse(requester, ref: ref, refusal) }
        // With a shared store this node may be behind on the table (nobody here subscribes) or on its rules (another
        // node's change not followed yet): the ack names a version followed here, and the patch applies to the
        // stored rules, in the store's transaction.
        await follow()
        do throws(ProtocolError) {
            let rules = try await stored.updateRules(patch)
            commits.engine.setRules(rules)
            audience.send(.rules(table: name, rules: rules))
            context.send(
                .ack(.init(ref: ref, table: name, version: table.version, epoch: epochText)), to: requester.connection)
        } catch {
            refuse(requester, ref: ref, error)
        }
    }

    private func drop(_ requester: Requester, ref: String?) async -> Bool {
        // A broken table may still be dropped: its rows in the store are what dropping removes.
        guard !dropped else {
            refuse(requester, ref: ref, ProtocolError(.noSuchTable, "no table '\(name)'"))
            return false
        }
        do throws(ProtocolError) {
            try await stored.drop()
        } catch {
            refuse(requester, ref: ref, error)
            return false
        }
        forgetAfterDrop()
        context.send(
            .ack(.init(ref: ref, table: name, version: table.version, epoch: epochText)), to: requester.connection)
        return true
    }

    /// The table is gone (dropped here or on another node): tells subscribers and refuses all later work.
    private func forgetAfterDrop() {
        dropped = true
        audience.dismissAll()
        publishStatus()
    }
}
