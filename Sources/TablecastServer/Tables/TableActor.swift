import DequeModule
import Synchronization
import TableModel
import TableStore
import TablecastProtocol
import WebSocketTransport

/// The authority over one table: it serializes the table's work, resolves intents with the pure ``TableEngine``,
/// persists them through the ``Committer`` and only then fans the update out and acknowledges.
///
/// Work arrives through ``enqueue(_:)`` into an ``Inbox``; one drain task per burst takes everything queued. Intents
/// are resolved one after another into a pending group. Commits are pipelined: while one group is being written,
/// the next is resolved against the in-memory state; when the written group is durable it is fanned out and
/// acknowledged, and the pending group is submitted. Any other work waits until nothing is in flight or pending,
/// so catch-ups, presence and rule changes always see committed state only.
actor TableActor {
    nonisolated let name: String
    nonisolated let epoch: Int64
    nonisolated let epochText: String
    private nonisolated let inbox = Inbox<TableWork>()
    /// Work taken from the inbox and not done yet: what follows the first non-intent item waits for the commits
    /// before it.
    private var backlog = Deque<TableWork>()
    /// Intents resolved and applied in memory since the group in flight was submitted.
    private var pending: PendingGroup
    /// The group the committer is writing; at most one per table, so a failure affects only it and `pending`.
    private var inFlight: PendingGroup?
    /// The outcome of the group in flight, left here by the committer's thread. The actor looks at it between
    /// intents, so that a long burst of work does not keep the committer waiting for the next group.
    private nonisolated let commitOutcome = Mutex<Result<Void, any Error>?>(nil)
    /// Version and subscriber count for `listTables`, readable without waiting for the actor.
    private nonisolated let status: Mutex<(version: UInt64, subscribers: Int)>
    /// The latest version known to be in the store (shared stores): another node's notification up to it needs
    /// no catch-up. Set as soon as the committer reports a commit, which may be before its notification arrives.
    private nonisolated let storedVersion: Atomic<UInt64>
    /// The latest version other nodes' notifications reported (shared stores). A table with no subscribers here
    /// does not read their commits as they come: it follows up to this version once work arrives.
    private nonisolated let knownVersion: Atomic<UInt64>
    /// Follows what other nodes commit to the table; nil on a store of its own, where the table is the only
    /// writer. The multi-node side of the table goes through it (and ``GroupReplay``, which records what a
    /// group took only when there is a follower).
    private let follower: TableFollower?
    private let context: ServerContext
    private var engine: TableEngine
    private var history: UpdateHistory
    /// The engine's history bytes as last counted in the update-history account (see ``accountMemory()``).
    private var accountedEngineBytes = 0
    private var subscribers = SubscriberList()
    /// Subscribers have the board's published state; its news go out as one `presence` delta per burst of work,
    /// and at most one per ``presenceInterval``.
    private var presence = PresenceBoard<PresenceMember>()
    /// Shared stores: who is on the table on the other nodes (on the board as `.remote` members), and what this
    /// node last shared of its own.
    private var otherNodesPresence = OtherNodesPresence()
    private var sharedPresence = ClusterPresence.Share()
    /// When the last `presence` message went out.
    private var lastPresenceBroadcast: ContinuousClock.Instant?
    /// A delayed broadcast is scheduled.
    private var presenceBroadcastScheduled = false
    /// The shortest time between two `presence` messages of a table.
    static let presenceInterval = Duration.milliseconds(100)
    /// The newest snapshot built and the catch-ups waiting for one: joiners of a busy table share one snapshot (one
    /// buffer, counted once in the memory budget's snapshot account) with the updates after it, instead of each
    /// landing on a version of its own. Let go ``snapshotLifetime`` after it was built, so idle tables hold none.
    private var snapshots = SnapshotSharing()
    /// How long a table keeps its shared snapshot; connections it was queued to keep it until it is written.
    static let snapshotLifetime = Duration.seconds(10)
    /// How soon a snapshot that could not be built (the snapshot account was full) is tried again.
    static let snapshotRetryInterval = Duration.milliseconds(100)
    private var dropped = false
    /// Set when the table could not be reloaded after a failed commit: it then refuses work with `unavailable`.
    private var broken: String?

    init(name: String, epoch: Int64, engine: TableEngine, context: ServerContext) {
        self.name = name
        self.epoch = epoch
        self.epochText = Epoch.text(epoch)
        self.engine = engine
        self.context = context
        history = Self.emptyHistory(after: engine.table.version, context: context)
        status = Mutex((engine.table.version, 0))
        storedVersion = Atomic(engine.table.version)
        knownVersion = Atomic(engine.table.version)
        follower = context.isShared ? TableFollower(table: name, committer: context.committer, metrics: context.metrics) : nil
        pending = PendingGroup(recording: follower != nil)
    }

    /// A new group, recording what it takes when the table has a follower (see ``GroupReplay``).
    private var newGroup: PendingGroup { PendingGroup(recording: follower != nil) }

    private static func emptyHistory(after version: UInt64, context: ServerContext) -> UpdateHistory {
        UpdateHistory(
            after: version, limit: context.historyLimit, byteLimit: context.historyBytes,
            account: context.budget[.updateHistory])
    }

    /// Intents queued and not yet taken up, for the bound on them (see ``enqueueIntent(_:ref:base:_:)``).
    private nonisolated let queuedIntents = Atomic<Int>(0)

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
            Task { await self.drain() }
        }
    }

    /// Another node committed up to `version` in the shared store: catch up unless this node has it already or
    /// nobody here subscribes to the table (its intents, subscribes and refreshes follow first).
    nonisolated func followCommits(upTo version: UInt64?) {
        if let version {
            knownVersion.max(version, ordering: .relaxed)
            if version <= storedVersion.load(ordering: .relaxed) || !isWatched { return }
        }
        enqueue(.followStore(.commits(upTo: version)))
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
            table: name, version: max(version, knownVersion.load(ordering: .relaxed)), epoch: epochText,
            subscribers: subscribers)
    }

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

    deinit {
        context.budget[.updateHistory].release(accountedEngineBytes)
    }

    /// Does the backlog in order until it is empty or its next item must wait for a commit.
    private func work() async {
        while let item = backlog.first {
            await finishCommitIfDone()
            if case .intent(let requester, let ref, let base, let intent) = item {
                await context.waitForFanOutRoom()
                // Other nodes' commits not followed yet (nobody here subscribes): resolving on top of them spares
                // a conflict.
                if inFlight == nil, pending.isEmpty, knownVersion.load(ordering: .relaxed) > engine.table.version {
                    await follow()
                }
                backlog.removeFirst()
                queuedIntents.subtract(1, ordering: .relaxed)
                await handleIntent(requester, ref: ref, base: base, intent)
                continue
            }
            submitPending()
            if inFlight != nil { return }
            backlog.removeFirst()
            await handle(item)
        }
        submitPending()
    }

    // MARK: Intents

    /// Intents resolved and applied in memory, waiting for their shared commit.
    private struct PendingGroup {
        struct Entry {
            var requester: Requester
            var ref: String?
            /// What `ref` was claimed for in the registry (stable clients' refs only).
            var claim: RefUse?
            var use: RefUse?
            var update: WebSocketMessage
            var ack: [UInt8]
            /// Rows it deletes that someone is editing: their presence is cleared once it is committed.
            var editedRowsDeleted: [String] = []
        }

        var records: [CommitRecord] = []
        var entries: [Entry] = []
        /// (owner, ref) of the entries, so a retry that arrives before the commit gets the same ack.
        var refs: [RefKey: Int] = [:]
        var duplicates: [(connection: WebSocketConnectionID, entry: Int)] = []
        /// What the group took, to resolve it again if another node beats it to its versions.
        var replay: GroupReplay<Source>
        /// Answers that must not overtake the group's acks (no-ops resolved against its uncommitted state).
        var deferred: [(connection: WebSocketConnectionID, ref: String?, message: ServerMessage)] = []

        var isEmpty: Bool { entries.isEmpty && deferred.isEmpty }

        init(recording: Bool) {
            replay = GroupReplay(recording: recording)
        }

        struct Source {
            var requester: Requester
            var ref: String?
            var base: UInt64?
            var intent: Intent
        }

        /// The entry `key` names, when it is a retry of it: nil when no entry has the ref; `ref_reused` when one
        /// has it for another intent.
        func retried(_ key: RefKey, _ use: RefUse) throws(ProtocolError) -> Int? {
            guard let index = refs[key] else { return nil }
            guard entries[index].use == use else { throw TableActor.reused(key.ref, of: key.owner.client, by: entries[index].use!) }
            return index
        }
    }

    struct RefKey: Hashable {
        var owner: RefOwner
        var ref: String
    }

    /// Who a presence entry is: a connection to this node, or an entry another node shares (by its key).
    enum PresenceMember: Hashable, Sendable {
        case local(WebSocketConnectionID)
        case remote(String)
    }

    /// The refusal of a ref already used for another intent.
    static func reused(_ ref: String, of client: String, by use: RefUse, for current: RefUse? = nil) -> ProtocolError {
        let table =
            current.map { use.table == $0.table && use.epoch != $0.epoch } == true
            ? "on an earlier table named '\(use.table)', dropped since" : "on table '\(use.table)'"
        return ProtocolError(
            .refReused,
            "ref '\(ref)' of client '\(client)' was already used for another intent (\(table)); a ref "
                + "names one intent: a retry must repeat it on the same table, and a new intent needs a new ref")
    }

    /// The fingerprint of an intent on this table, which tells a retry from another intent sent with the same
    /// ref: FNV-1a (64 bits) of the intent's canonical encoding without ref and base (a retry may be rebased).
    private func fingerprint(_ intent: Intent) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in ClientMessage(.intent(table: name, base: nil, intent)).encoded {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        let digits = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }

    private func refuse(_ requester: Requester, ref: String?, _ error: ProtocolError) {
        context.refuse(requester.connection, error, ref: ref)
    }

    /// Resolves an intent into the pending group. `checkStore`: look its ref up in the store whatever the registry
    /// says (a rebase after a conflict, which may have been another node storing the same ref).
    private func handleIntent(
        _ requester: Requester, ref: String?, base: UInt64?, _ intent: Intent, checkStore: Bool = false
    ) async {
        await recoverIfBroken()
        if let refusal = unavailability {
            context.metrics.intent(refusal.code == .unavailable ? .unavailable : .rejected, table: name)
            return refuse(requester, ref: ref, refusal)
        }
        let use = ref.map { _ in RefUse(table: name, epoch: epoch, intent: fingerprint(intent)) }
        let source = { PendingGroup.Source(requester: requester, ref: ref, base: base, intent: intent) }
        if let ref, let use {
            let key = RefKey(owner: requester.refOwner, ref: ref)
            do {
                // A retry of an intent not committed yet is answered with the original's ack once it is.
                if let index = try inFlight?.retried(key, use) {
                    inFlight!.duplicates.append((requester.connection, index))
                    inFlight!.replay.took(source())
                    context.metrics.intent(.duplicate, table: name)
                    return
                }
                if let index = try pending.retried(key, use) {
                    pending.duplicates.append((requester.connection, index))
                    pending.replay.took(source())
                    context.metrics.intent(.duplicate, table: name)
                    return
                }
                // Anonymous clients' refs are never stored, so neither the registry nor the store knows them.
                if requester.stable, try await answeredRetry(requester, key, use, checkStore: checkStore) {
                    context.metrics.intent(.duplicate, table: name)
                    return
                }
            } catch {
                context.metrics.intent(.rejected, table: name)
                return refuse(requester, ref: ref, error)
            }
        }
        let resolution: Resolution
        do {
            resolution = try engine.resolve(intent, base: base)
        } catch {
            context.metrics.intent(.rejected, table: name)
            return refuse(requester, ref: ref, ProtocolError(error))
        }
        let ack = ServerMessage.ack(.init(ref: ref, table: name, epoch: epochText, resolution: resolution))
        pending.replay.took(source())
        if resolution.isNoop {
            context.metrics.intent(.noop, table: name)
            pending.deferred.append((requester.connection, ref, ack))
            return
        }
        let keepsRef = requester.stable && ref != nil
        if keepsRef, let ref, let use, let prior = context.refs.claim(requester.refOwner, ref, for: use), !prior.admits(use) {
            // Claimed meanwhile by the same client on another table (the check above found it free).
            context.metrics.intent(.rejected, table: name)
            return refuse(requester, ref: ref, Self.reused(ref, of: requester.client, by: prior, for: use))
        }
        let editedRowsDeleted = presence.anyRowEdited ? deletedRows(resolution.batch).filter(presence.isEdited) : []
        pending.replay.willChange(engine)
        do {
            try engine.commit(resolution)
        } catch {
            // resolve() just succeeded against this very state, so this is a bug; say so rather than crash.
            context.logger.error("commit of a fresh resolution failed", metadata: ["table": "\(name)", "error": "\(error)"])
            return refuse(requester, ref: ref, ProtocolError(.internal, "the table could not apply a resolved change"))
        }
        let update = ServerMessage.Update(
            table: name, version: resolution.version, originClient: requester.client, originRef: ref,
            batch: resolution.batch)
        let ackBytes = ack.encoded
        let batchJSON = resolution.batch.jsonBytes
        let snapshot = resolution.version % context.snapshotInterval == 0 ? engine.table.json.jsonText : nil
        pending.records.append(
            CommitRecord(
                table: name, version: Int64(resolution.version),
                batch: String(decoding: batchJSON, as: UTF8.self),
                originClient: requester.client, originRef: keepsRef ? ref : nil, time: ServerContext.now(),
                ack: keepsRef ? String(decoding: ackBytes, as: UTF8.self) : "", snapshot: snapshot,
                principal: requester.principal, intent: keepsRef ? use?.intent ?? "" : "", originName: requester.name ?? "",
                epoch: epoch))
        if let ref { pending.refs[RefKey(owner: requester.refOwner, ref: ref)] = pending.entries.count }
        pending.entries.append(
            .init(
                requester: requester, ref: ref, claim: keepsRef ? use : nil, use: use,
                update: WebSocketMessage(kind: .text, bytes: update.encoded(batchJSON: batchJSON)),
                ack: ackBytes, editedRowsDeleted: editedRowsDeleted))
    }

    /// The ids of the rows `batch` deletes, alone or with their section, read from the table before it applies.
    private func deletedRows(_ batch: Batch) -> [String] {
        let sections = engine.table.sections
        var ids = batch.deleteRows.compactMap { engine.table.row(at: $0)?.id }
        for index in batch.deleteSections where sections.indices.contains(index) {
            ids += sections[index].rows.map(\.id)
        }
        return ids
    }

    /// Answers a retry of a committed intent with the ack stored when it was first committed and returns true;
    /// false when the ref is new (or was pruned from the store), so the intent is applied. Throws `ref_reused`
    /// when the ref names another intent, and `unavailable` when the store cannot be read: a retry is never taken
    /// for a new intent on a guess.
    /// `checkStore`: look the ref up in the store whatever the registry says (a rebase after another node stored a ref).
    private func answeredRetry(
        _ requester: Requester, _ key: RefKey, _ use: RefUse, checkStore: Bool
    ) async throws(ProtocolError) -> Bool {
        // The registry is complete only while the owner's refs are loaded: an intent still queued here when its
        // client's last connection closed (and the registry forgot it) is checked against the store.
        let known = context.refs.use(key.owner, key.ref)
        if let known, !known.admits(use) { throw Self.reused(key.ref, of: key.owner.client, by: known, for: use) }
        guard checkStore || known != nil || !context.refs.isLoaded(key.owner) else { return false }
        let stored: StoredAck?
        do {
            stored = try await context.committer.perform { [key] in
                try $0.ack(client: key.owner.client, ref: key.ref, principal: key.owner.principal)
            }
        } catch {
            throw context.unavailable(
                "ref '\(key.ref)' could not be looked up, nothing was applied (send it again)", error, table: name)
        }
        guard let stored else { return false }
        let prior = RefUse(table: stored.table, epoch: stored.epoch, intent: stored.intent)
        guard prior.admits(use) else { throw Self.reused(key.ref, of: key.owner.client, by: prior, for: use) }
        context.transport.send(WebSocketMessage(kind: .text, bytes: withEpoch(stored.ack)), to: requester.connection)
        return true
    }

    /// A stored ack with the table's current epoch: the one it was stored with may be older (a copy of the
    /// database gives its tables new epochs) or missing (stored before acks carried it).
    private func withEpoch(_ ack: String) -> [UInt8] {
        guard case .object(var members)? = try? JSONValue(parsing: ack) else { return Array(ack.utf8) }
        members["epoch"] = .string(epochText)
        return JSONValue.object(members).jsonBytes
    }

    /// Hands the pending group to the committer unless a group is in flight; its outcome is left in
    /// `commitOutcome`, and `.committed` wakes the table. A group of no-ops only is answered at once: nothing of
    /// it needs storing.
    private func submitPending() {
        guard inFlight == nil, !pending.isEmpty else { return }
        let group = pending
        pending = newGroup
        guard !group.records.isEmpty else { return publish(group) }
        inFlight = group
        let last = UInt64(group.records.last!.version)
        context.committer.submit(group.records) { [self] outcome in
            if case .success = outcome { storedVersion.store(last, ordering: .relaxed) }
            commitOutcome.withLock { $0 = outcome }
            enqueue(.committed)
        }
    }

    /// Finishes the group in flight if the committer is done with it.
    private func finishCommitIfDone() async {
        guard inFlight != nil, let outcome = commitOutcome.withLock({ $0.take() }) else { return }
        await finishCommit(outcome)
    }

    /// The group in flight was written: fan it out and acknowledge it; or, on a storage failure, acknowledge
    /// nothing: every intent of it and of the pending group (resolved on top of it) gets `unavailable` and the
    /// table is reloaded from the store.
    private func finishCommit(_ outcome: Result<Void, any Error>) async {
        guard let group = inFlight else { return }
        inFlight = nil
        switch outcome {
        case .success:
            // The group resolved meanwhile goes to the committer before this one is fanned out, so the committer
            // does not wait for the fan-out or for the intents that arrived during the commit. A group of no-ops
            // only is answered at once instead, so it waits until this group's answers are out.
            if !pending.records.isEmpty { submitPending() }
            publish(group)
            submitPending()
        case .failure(let error as StoreError)
        where [.conflict, .duplicateRef].contains(error.kind) && group.replay.canRebase:
            // Refs are looked up again only when one of them was the conflict: a lookup per intent is costly,
            // and a ref stored elsewhere that a version conflict hid fails the next attempt as `.duplicateRef`.
            await rebase(group, checkingRefs: error.kind == .duplicateRef)
        case .failure(let error):
            let lost = group.entries.count + pending.entries.count
            let incident = context.failures.log(
                .error, "could not store a group of changes", cause: ProtocolError.reason(error),
                metadata: ["table": "\(name)", "intents": .stringConvertible(lost), "error": "\(error)"])
            let refusal = ProtocolError.notStored(error, incident: incident)
            for entry in group.entries + pending.entries {
                if let ref = entry.ref, let claim = entry.claim { context.refs.release(entry.requester.refOwner, ref, use: claim) }
            }
            refuseAll(group, refusal)
            refuseAll(
                pending,
                ProtocolError.unavailable("the change could not be stored, nothing was applied", error, incident: incident))
            pending = newGroup
            // The engine before the group is the committed table (a shared store's groups record it): it keeps
            // serving reads while the store is down, and follows the store's log once it answers. Otherwise the
            // table is read again from the store.
            guard let committed = group.replay.engineBefore else { return await reload() }
            engine = committed
            snapshots.forget()
            publishStatus()
        }
    }

    /// Another node committed first (or stored a ref of the group: a retry it took): nothing of `group` was stored.
    /// Go back to the state before it, follow the other nodes' commits, and resolve the group's intents, and the
    /// pending ones resolved on top of it, again: a stale intent is rebased as any other. They go out with the
    /// next group and are acknowledged once it is stored.
    private func rebase(_ group: PendingGroup, checkingRefs: Bool) async {
        let replay = group.replay.followed(by: pending.replay)
        // Claimed when resolved; each is claimed again as it is resolved anew.
        for entry in group.entries + pending.entries {
            if let ref = entry.ref, let claim = entry.claim { context.refs.release(entry.requester.refOwner, ref, use: claim) }
        }
        engine = replay.engineBefore!
        snapshots.forget()
        pending = newGroup
        context.metrics.rebases.increment()
        // The store reserved the table for the rebased group: with nothing to commit, other nodes need not wait.
        defer { if pending.records.isEmpty { context.committer.release(name) } }
        guard await follow() else {
            let refusal = ProtocolError(.unavailable, "the change could not be stored, nothing was applied")
            for source in replay.sources {
                context.metrics.intent(.unavailable, table: name)
                refuse(source.requester, ref: source.ref, refusal)
            }
            return
        }
        for source in replay.sources {
            await handleIntent(
                source.requester, ref: source.ref, base: source.base, source.intent, checkStore: checkingRefs)
        }
    }

    /// Applies what other nodes committed after the engine's version, read from the store's log, and fans it out
    /// in version order. A log that no longer reaches back (pruned) reloads the table and sends subscribers a
    /// snapshot. False when the store could not be read; the table then reloads. Nothing to do on a store of its
    /// own.
    @discardableResult
    private func follow() async -> Bool {
        guard let follower else { return true }
        let followed: FollowedBatches
        switch await follower.read(after: engine.table.version) {
        case .followed(let batches):
            followed = batches
        case .gap:
            await reload()
            return broken == nil
        case .failed(let error):
            // The engine is at a committed version (nothing is in flight or pending here): it is served as it is.
            context.failures.log(
                .error, "could not read other nodes' commits", cause: ProtocolError.reason(error),
                metadata: ["table": "\(name)", "error": "\(error)"])
            return false
        }
        do {
            try followed.apply(to: &engine)
        } catch {
            context.logger.error("another node's batch does not apply", metadata: ["table": "\(name)", "error": "\(error)"])
            await reload()
            return broken == nil
        }
        for entry in followed.entries {
            history.append(entry.update)
            context.recentChanges.append(
                name, epoch: epoch, version: entry.version, time: entry.time, originName: entry.originName,
                update: entry.update)
            if !subscribers.isEmpty {
                context.transport.send(entry.update, to: subscribers.ids)
                context.metrics.deliveries.increment(by: Int64(subscribers.count))
            }
        }
        storedVersion.store(engine.table.version, ordering: .relaxed)
        publishStatus()
        return true
    }

    private func refuseAll(_ group: PendingGroup, _ refusal: ProtocolError) {
        for entry in group.entries {
            context.metrics.intent(.unavailable, table: name)
            refuse(entry.requester, ref: entry.ref, refusal)
        }
        for (connection, index) in group.duplicates {
            context.refuse(connection, refusal, ref: group.entries[index].ref)
        }
        for (connection, ref, _) in group.deferred { context.refuse(connection, refusal, ref: ref) }
    }

    /// Fans out a durable group's updates and sends its acks, each originator's after its own update.
    private func publish(_ group: PendingGroup) {
        for (entry, record) in zip(group.entries, group.records) {
            history.append(entry.update)
            context.recentChanges.append(
                name, epoch: epoch, version: UInt64(record.version), time: record.time, originName: record.originName,
                update: entry.update)
            if !subscribers.isEmpty {
                context.transport.send(entry.update, to: subscribers.ids)
                context.metrics.deliveries.increment(by: Int64(subscribers.count))
            }
            for row in entry.editedRowsDeleted { presence.clearRow(row) }
            context.transport.send(WebSocketMessage(kind: .text, bytes: entry.ack), to: entry.requester.connection)
            // Claimed when resolved; claimed again in case the owner's last connection closed meanwhile.
            if let ref = entry.ref, let claim = entry.claim { _ = context.refs.claim(entry.requester.refOwner, ref, for: claim) }
            context.metrics.intent(.committed, table: name)
        }
        for (connection, index) in group.duplicates {
            context.transport.send(WebSocketMessage(kind: .text, bytes: group.entries[index].ack), to: connection)
        }
        for (connection, _, message) in group.deferred { context.send(message, to: connection) }
        if let last = group.records.last { publishStatus(version: UInt64(last.version)) }
    }

    /// Replaces the in-memory state, which holds changes that were never stored, with the store's.
    private func reload() async {
        let name = name
        let (historyLimit, historyBytes) = (context.historyLimit, context.historyBytes)
        do {
            let engine = try await context.committer.perform { store in
                try TableEngine(loading: name, from: store, historyLimit: historyLimit, historyByteLimit: historyBytes)
            }
            let previous = self.engine.table.version
            self.engine = engine
            snapshots.forget()
            history = Self.emptyHistory(after: engine.table.version, context: context)
            storedVersion.store(engine.table.version, ordering: .relaxed)
            broken = nil
            // With a shared store the reload may bring others' commits that subscribers never got: resend it all.
            if follower != nil && engine.table.version != previous && !subscribers.isEmpty {
                let table = engine.table
                let snapshot = ServerMessage.snapshot(
                    table: name, version: table.version, epoch: epochText, rules: table.rules, sections: table.sections)
                let message = WebSocketMessage(kind: .text, bytes: snapshot.encoded)
                message.charge(to: context.budget[.snapshots])
                context.metrics.snapshotsEncoded.increment()
                snapshots.share(.init(version: table.version, rules: table.rules, message: message))
                expireSnapshot(version: table.version)
                context.transport.send(message, to: subscribers.ids)
            }
            publishStatus()
        } catch {
            broken = context.unavailable(
                "table '\(name)' could not be reloaded after a storage failure", error, table: name, level: .critical
            ).message
            // The engine still holds the changes that were never stored: list the last version that was.
            publishStatus(version: storedVersion.load(ordering: .relaxed))
        }
    }

    /// A table left broken by a storage failure tries to reload before refusing work: once the store answers
    /// again (a restarted PostgreSQL, a freed disk) it serves as before, without a restart.
    private func recoverIfBroken() async {
        if broken != nil { await reload() }
    }

    private var unavailability: ProtocolError? {
        if dropped { return ProtocolError(.noSuchTable, "table '\(name)' was dropped") }
        if let broken { return ProtocolError(.unavailable, broken) }
        return nil
    }

    /// Publishes the committed version and the subscriber count for `listTables`. The version defaults to the
    /// engine's, which is the committed one whenever nothing is in flight or pending (all work but intents).
    private func publishStatus(version: UInt64? = nil) {
        let version = version ?? engine.table.version
        let count = subscribers.count
        status.withLock { $0 = (version, count) }
    }

    // MARK: Everything else

    private func handle(_ item: TableWork) async {
        switch item {
        case .intent:
            preconditionFailure("intents are handled by handleIntent")
        case .subscribe(let requester, let ref, let since, let epoch):
            guard isOpen(requester) else { return }
            await recoverIfBroken()
            if let refusal = unavailability { return refuse(requester, ref: ref, refusal) }
            // A table nobody here watched may have missed who is on it elsewhere.
            if subscribers.isEmpty { await followPresence() }
            guard await catchUp(requester.connection, since: since, epoch: epoch) else {
                return waitForSnapshot(requester, ref: ref, subscribing: true)
            }
            finishCatchUp(requester, ref: ref, subscribing: true)
        case .refresh(let requester, let ref, let since, let epoch):
            guard isOpen(requester) else { return }
            if let refusal = unavailability { return refuse(requester, ref: ref, refusal) }
            guard await catchUp(requester.connection, since: since, epoch: epoch) else {
                return waitForSnapshot(requester, ref: ref, subscribing: false)
            }
            finishCatchUp(requester, ref: ref, subscribing: false)
        case .snapshotBuilt(let version, let rules, let message):
            snapshotBuilt(version: version, rules: rules, message)
        case .retrySnapshot:
            if snapshots.retryBuilding() { buildSnapshot() }
        case .snapshotExpired(let version):
            snapshots.expire(version: version)
        case .unsubscribe(let requester, let ref):
            snapshots.cancelSubscribe(of: requester.connection)
            removeSubscriber(requester.connection)
            context.send(.unsubscribed(ref: ref, table: name), to: requester.connection)
        case .disconnected(let connection):
            removeSubscriber(connection)
        case .presence(let requester, let ref, let change):
            if let refusal = unavailability { return refuse(requester, ref: ref, refusal) }
            guard presence.contains(.local(requester.connection)) else {
                return refuse(
                    requester, ref: ref,
                    ProtocolError(.badRequest, "presence on table '\(name)' needs a subscription to it first"))
            }
            switch change {
            case .editing(let on): presence.setEditing(.local(requester.connection), on)
            case .beginEditingRow(let row): presence.beginEditingRow(.local(requester.connection), row: row)
            case .endEditingRow(let row): presence.endEditingRow(.local(requester.connection), row: row)
            }
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

    /// What another node did: nothing is in flight or pending here (this is not an intent), so the engine is at
    /// the committed version.
    private func follow(_ change: TableWork.StoreChange) async {
        guard !dropped else { return }
        switch change {
        case .commits(let version):
            if let version, version <= engine.table.version { return }
            await follow()
        case .rules:
            let name = name
            guard let info = try? await context.committer.perform({ try $0.table(name) }),
                let rules = try? TableRules(json: JSONValue(parsing: info.rules)), rules != engine.table.rules
            else { return }
            engine.setRules(rules)
            context.send(.rules(table: name, rules: rules), to: subscribers.ids)
        case .dropped:
            forgetAfterDrop()
        case .presence:
            await followPresence()
        }
    }

    /// Reads the other nodes' presence on the table and brings their entries on the board in line with it;
    /// subscribers hear of a change with the next delta.
    private func followPresence() async {
        guard let cluster = context.clusterPresence else { return }
        otherNodesPresence.show(await cluster.others(on: name), on: &presence, as: PresenceMember.remote)
    }

    /// Answers a catch-up whose snapshot or updates were sent: `subscribed` (and the subscription) or `refreshed`.
    private func finishCatchUp(_ requester: Requester, ref: String?, subscribing: Bool) {
        guard subscribing else { return sendStatus("refreshed", ref: ref, to: requester) }
        sendStatus("subscribed", ref: ref, to: requester)
        if subscribers.insert(requester.connection) { context.metrics.subscribers.increment() }
        presence.join(
            .local(requester.connection), key: requester.presenceKey, client: requester.client, name: requester.name)
        publishStatus()
    }

    /// Queues a catch-up behind the snapshot of the committed table, starting to build it on another task unless
    /// that is under way.
    private func waitForSnapshot(_ requester: Requester, ref: String?, subscribing: Bool) {
        if snapshots.wait(.init(requester: requester, ref: ref, subscribing: subscribing)) { buildSnapshot() }
    }

    /// Builds a snapshot of the committed table on another task, so that the table's writers do not wait for it.
    /// While the memory budget's snapshot account is over its share (snapshots still queued to slow readers), the
    /// build waits and is tried again: joiners wait rather than the server grow.
    private func buildSnapshot() {
        let account = context.budget[.snapshots]
        guard !account.isOver else {
            account.degraded()
            Task {
                try? await Task.sleep(for: Self.snapshotRetryInterval)
                enqueue(.retrySnapshot)
            }
            return
        }
        let table = engine.table
        let (name, epoch) = (name, epochText)
        Task.detached { [self] in
            let snapshot = ServerMessage.snapshot(
                table: name, version: table.version, epoch: epoch, rules: table.rules, sections: table.sections)
            let message = WebSocketMessage(kind: .text, bytes: snapshot.encoded)
            message.charge(to: account)
            enqueue(.snapshotBuilt(version: table.version, rules: table.rules, message))
        }
    }

    /// The snapshot at `version` is ready: it becomes the shared one, and each waiter still connected gets it, the
    /// updates committed since (or, when they are too many, waits for a newer snapshot) and its answer.
    private func snapshotBuilt(version: UInt64, rules: TableRules, _ message: WebSocketMessage) {
        context.metrics.snapshotsEncoded.increment()
        let waiters = snapshots.built(.init(version: version, rules: rules, message: message))
        expireSnapshot(version: version)
        let catchUp = fromSharedSnapshot()
        for waiter in waiters where isOpen(waiter.requester) {
            if let refusal = unavailability {
                refuse(waiter.requester, ref: waiter.ref, refusal)
                continue
            }
            guard let catchUp else {
                snapshots.requeue(waiter)
                continue
            }
            for message in catchUp { context.transport.send(message, to: waiter.requester.connection) }
            finishCatchUp(waiter.requester, ref: waiter.ref, subscribing: waiter.subscribing)
        }
        if snapshots.startBuilding() { buildSnapshot() }
    }

    /// Lets go of the shared snapshot of `version` after ``snapshotLifetime``.
    private func expireSnapshot(version: UInt64) {
        Task {
            try? await Task.sleep(for: Self.snapshotLifetime)
            enqueue(.snapshotExpired(version: version))
        }
    }

    /// The shared snapshot followed by the updates committed after it, when they are all kept and fit the catch-up
    /// bound and the rules have not changed since; nil when a newer snapshot is needed.
    private func fromSharedSnapshot() -> [WebSocketMessage]? {
        snapshots.catchUp(
            version: engine.table.version, rules: engine.table.rules, history: history, limit: context.catchUpLimit)
    }

    /// Whether `requester`'s connection is still open; a catch-up queued for a closed one is dropped unbuilt.
    private func isOpen(_ requester: Requester) -> Bool {
        guard context.isOpen(requester.connection) else {
            context.metrics.catchUpsDropped.increment()
            return false
        }
        return true
    }

    /// Ends a catch-up with `subscribed` or `refreshed` (`type`), carrying the presence every subscriber has now:
    /// the published state, written once for all who catch up until the next delta.
    private func sendStatus(_ type: StaticString, ref: String?, to requester: Requester) {
        let status = ServerMessage.TableStatus(
            table: name, version: engine.table.version, epoch: epochText, rules: engine.table.rules)
        let text = status.encoded(
            type: type, ref: ref, you: requester.presenceKey, sharedPresence: presence.publishedStateJSON())
        context.transport.send(WebSocketMessage(kind: .text, bytes: text), to: requester.connection)
    }

    private func removeSubscriber(_ connection: WebSocketConnectionID) {
        if subscribers.remove(connection) {
            context.metrics.subscribers.decrement()
            publishStatus()
        }
        presence.leave(.local(connection))
    }

    /// Sends the presence delta now if the last one went out at least ``presenceInterval`` ago, otherwise once the
    /// interval is over (with whatever changed meanwhile).
    private func broadcastPresenceWhenDue() {
        guard !presenceBroadcastScheduled else { return }
        let now = ContinuousClock.now
        if let last = lastPresenceBroadcast, now - last < Self.presenceInterval {
            presenceBroadcastScheduled = true
            let delay = Self.presenceInterval - (now - last)
            Task {
                try? await Task.sleep(for: delay)
                self.broadcastScheduledPresence()
            }
            return
        }
        if let cluster = context.clusterPresence {
            let local = ClusterPresence.Share(
                clients: presence.listed { if case .local = $0 { true } else { false } }, viewers: presence.ownViewerCount)
            if local != sharedPresence {
                sharedPresence = local
                cluster.publish(table: name, local)
            }
        }
        guard let delta = presence.takeDelta(table: name) else { return }
        lastPresenceBroadcast = now
        context.send(.presence(delta), to: subscribers.ids)
    }

    private func broadcastScheduledPresence() {
        presenceBroadcastScheduled = false
        if presence.hasNews { broadcastPresenceWhenDue() }
    }

    /// Brings a client from `since` (in epoch `epoch`) to the current version: the missed updates from memory or
    /// the store's log when they are all there and fit the catch-up limit (which a resume after a long absence may
    /// not: sent anyway, they would close the connection as a slow reader at every attempt), otherwise the shared
    /// snapshot. False when that snapshot must be built first (nothing was sent).
    private func catchUp(_ connection: WebSocketConnectionID, since: UInt64?, epoch: String?) async -> Bool {
        // With a shared store, what another node acknowledged a moment ago may not have been followed yet: read it
        // first, so a client that saw an ack from one node finds the change on every other. Not while the store is
        // down: the catch-up would wait for it in vain.
        if context.health.isUp { await follow() }
        let current = engine.table.version
        let limit = context.catchUpLimit
        if let since, epoch == epochText, since <= current {
            if since == current { return true }
            if current - since <= UInt64(limit.messages), let missed = await updates(after: since),
                missed.reduce(0, { $0 + $1.count }) <= limit.bytes
            {
                for message in missed { context.transport.send(message, to: connection) }
                return true
            }
        }
        guard let catchUp = fromSharedSnapshot() else { return false }
        for message in catchUp { context.transport.send(message, to: connection) }
        return true
    }

    /// The committed updates after `since`, from memory or else the store's log; nil when they are not all there.
    private func updates(after since: UInt64) async -> [WebSocketMessage]? {
        if let messages = history.messages(after: since) { return Array(messages) }
        let name = name
        let current = engine.table.version
        guard let entries = try? await context.committer.perform({ try $0.logEntries(name, after: Int64(since)) }),
            entries.count == Int(current - since), entries.first?.version == Int64(since + 1)
        else { return nil }
        return try? entries.map { entry in
            let update = ServerMessage.Update(
                table: name, version: UInt64(entry.version), originClient: entry.originClient,
                originRef: entry.originRef, batch: try Batch(json: JSONValue(parsing: entry.batch)))
            return WebSocketMessage(kind: .text, bytes: update.encoded)
        }
    }

    private func setRules(_ requester: Requester, ref: String?, _ patch: RulesPatch) async {
        // With a shared store this node may be behind on the table (nobody here subscribes) or on its rules (another
        // node's change not followed yet): the ack names a version followed here, and the patch applies to the
        // stored rules, in the store's transaction.
        await follow()
        let name = name
        let rules: TableRules
        do {
            let text = try await context.committer.perform { store in
                try store.updateRules(of: name) { stored in
                    patch.applied(to: try TableRules(json: JSONValue(parsing: stored))).json.jsonText
                }
            }
            rules = try TableRules(json: JSONValue(parsing: text))
        } catch {
            return refuse(requester, ref: ref, context.unavailable("the rules could not be stored", error, table: name))
        }
        engine.setRules(rules)
        context.send(.rules(table: name, rules: rules), to: subscribers.ids)
        context.send(.ack(.init(ref: ref, table: name, version: engine.table.version, epoch: epochText)), to: requester.connection)
    }

    private func drop(_ requester: Requester, ref: String?) async -> Bool {
        // A broken table may still be dropped: its rows in the store are what dropping removes.
        guard !dropped else {
            refuse(requester, ref: ref, ProtocolError(.noSuchTable, "no table '\(name)'"))
            return false
        }
        let name = name
        do {
            try await context.committer.perform { try $0.dropTable(name) }
        } catch {
            refuse(requester, ref: ref, context.unavailable("the table could not be dropped", error, table: name))
            return false
        }
        forgetAfterDrop()
        context.send(.ack(.init(ref: ref, table: name, version: engine.table.version, epoch: epochText)), to: requester.connection)
        return true
    }

    /// The table is gone (dropped here or on another node): tells subscribers and refuses all later work.
    private func forgetAfterDrop() {
        dropped = true
        context.send(.dropped(table: name), to: subscribers.ids)
        context.metrics.subscribers.decrement(by: Double(subscribers.count))
        subscribers.removeAll()
        presence = PresenceBoard()
        otherNodesPresence = OtherNodesPresence()
        publishStatus()
    }
}
