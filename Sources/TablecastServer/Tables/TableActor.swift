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
    private var pending = PendingGroup()
    /// The group the committer is writing; at most one per table, so a failure affects only it and `pending`.
    private var inFlight: PendingGroup?
    /// The outcome of the group in flight, left here by the committer's thread. The actor looks at it between
    /// intents, so that a long burst of work does not keep the committer waiting for the next group.
    private nonisolated let commitOutcome = Mutex<Result<Void, any Error>?>(nil)
    /// Version and subscriber count for `listTables`, readable without waiting for the actor.
    private nonisolated let status: Mutex<(version: UInt64, subscribers: Int)>
    private let context: ServerContext
    private var engine: TableEngine
    private var history: UpdateHistory
    private var subscribers: [WebSocketConnectionID: Requester] = [:]
    private var subscriberIDs: [WebSocketConnectionID] = []
    private var presence = PresenceBoard<WebSocketConnectionID>()
    /// Presence changed and subscribers have not been told yet. One `presence` message carries every change of a
    /// burst of work, and at most one goes out per ``presenceInterval``: each carries the whole list, so a
    /// thousand subscribers joining one by one would otherwise cost a million entries.
    private var presenceChanged = false
    /// When the last `presence` message went out.
    private var lastPresenceBroadcast: ContinuousClock.Instant?
    /// A delayed broadcast is scheduled.
    private var presenceBroadcastScheduled = false
    /// The shortest time between two `presence` messages of a table.
    static let presenceInterval = Duration.milliseconds(100)
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
    }

    private static func emptyHistory(after version: UInt64, context: ServerContext) -> UpdateHistory {
        UpdateHistory(after: version, limit: context.historyLimit, byteLimit: 16 << 20)
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

    /// The line of `tables` for this table.
    nonisolated var summary: ServerMessage.TableSummary {
        let (version, subscribers) = status.withLock { $0 }
        return .init(table: name, version: version, epoch: epochText, subscribers: subscribers)
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
            if presenceChanged { broadcastPresenceWhenDue() }
        }
    }

    /// Does the backlog in order until it is empty or its next item must wait for a commit.
    private func work() async {
        while let item = backlog.first {
            await finishCommitIfDone()
            if case .intent(let requester, let ref, let base, let intent) = item {
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
            var update: WebSocketMessage
            var ack: [UInt8]
        }

        var records: [CommitRecord] = []
        var entries: [Entry] = []
        /// (client, ref) of the entries, so a retry that arrives before the commit gets the same ack.
        var refs: [String: Int] = [:]
        var duplicates: [(connection: WebSocketConnectionID, entry: Int)] = []
        /// Answers that must not overtake the group's acks (no-ops resolved against its uncommitted state).
        var deferred: [(connection: WebSocketConnectionID, ref: String?, message: ServerMessage)] = []

        var isEmpty: Bool { entries.isEmpty && deferred.isEmpty }

        static func key(_ client: String, _ ref: String) -> String { "\(client)\u{0}\(ref)" }
    }

    private func refuse(_ requester: Requester, ref: String?, _ error: ProtocolError) {
        context.refuse(requester.connection, error, ref: ref)
    }

    private func handleIntent(_ requester: Requester, ref: String?, base: UInt64?, _ intent: Intent) async {
        if let refusal = unavailability {
            context.metrics.intent(.rejected, table: name)
            return refuse(requester, ref: ref, refusal)
        }
        if let ref {
            // A retry of an intent not committed yet is answered with the original's ack once it is.
            let key = PendingGroup.key(requester.client, ref)
            if let index = inFlight?.refs[key] {
                inFlight!.duplicates.append((requester.connection, index))
                context.metrics.intent(.duplicate, table: name)
                return
            }
            if let index = pending.refs[key] {
                pending.duplicates.append((requester.connection, index))
                context.metrics.intent(.duplicate, table: name)
                return
            }
            // The registry is complete only while the client's refs are loaded: an intent still queued here when
            // its client's last connection closed (and the registry forgot it) is checked against the store.
            // Anonymous clients' refs are never stored, so the store is no use for them.
            let known =
                requester.stable
                && (context.refs.contains(requester.client, ref) || !context.refs.isLoaded(requester.client))
            if known, await resendStoredAck(requester, ref: ref) {
                context.metrics.intent(.duplicate, table: name)
                return
            }
        }
        let resolution: Resolution
        do {
            resolution = try engine.resolve(intent, base: base)
        } catch {
            context.metrics.intent(.rejected, table: name)
            return refuse(requester, ref: ref, ProtocolError(error))
        }
        let ack = ServerMessage.ack(.init(ref: ref, table: name, resolution: resolution))
        if resolution.isNoop {
            context.metrics.intent(.noop, table: name)
            pending.deferred.append((requester.connection, ref, ack))
            return
        }
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
        let keepsRef = requester.stable && ref != nil
        let snapshot = resolution.version % context.snapshotInterval == 0 ? engine.table.json.jsonText : nil
        pending.records.append(
            CommitRecord(
                table: name, version: Int64(resolution.version),
                batch: String(decoding: batchJSON, as: UTF8.self),
                originClient: requester.client, originRef: keepsRef ? ref : nil, time: ServerContext.now(),
                ack: keepsRef ? String(decoding: ackBytes, as: UTF8.self) : "", snapshot: snapshot))
        if let ref { pending.refs[PendingGroup.key(requester.client, ref)] = pending.entries.count }
        pending.entries.append(
            .init(
                requester: requester, ref: ref,
                update: WebSocketMessage(kind: .text, bytes: update.encoded(batchJSON: batchJSON)),
                ack: ackBytes))
    }

    /// Answers a retried intent with the ack stored when it was first committed; false when the store no longer
    /// has it (the ref was pruned), in which case the intent is treated as new.
    private func resendStoredAck(_ requester: Requester, ref: String) async -> Bool {
        let client = requester.client
        guard let stored = try? await context.committer.perform({ try $0.ack(client: client, ref: ref) }) else {
            return false
        }
        context.transport.send(WebSocketMessage(kind: .text, bytes: Array(stored.ack.utf8)), to: requester.connection)
        return true
    }

    /// Hands the pending group to the committer unless a group is in flight; its outcome is left in
    /// `commitOutcome`, and `.committed` wakes the table. A group of no-ops only is answered at once: nothing of
    /// it needs storing.
    private func submitPending() {
        guard inFlight == nil, !pending.isEmpty else { return }
        let group = pending
        pending = PendingGroup()
        guard !group.records.isEmpty else { return publish(group) }
        inFlight = group
        context.committer.submit(group.records) { [self] outcome in
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
        case .failure(let error):
            let lost = group.entries.count + pending.entries.count
            context.logger.error(
                "could not store a group of changes",
                metadata: ["table": "\(name)", "intents": "\(lost)", "error": "\(error)"])
            let refusal = ProtocolError(.unavailable, "the change could not be stored, nothing was applied: \(error)")
            refuseAll(group, refusal)
            refuseAll(pending, refusal)
            pending = PendingGroup()
            await reload()
        }
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
        for entry in group.entries {
            history.append(entry.update)
            if !subscriberIDs.isEmpty {
                context.transport.send(entry.update, to: subscriberIDs)
                context.metrics.deliveries.increment(by: Int64(subscriberIDs.count))
            }
            context.transport.send(WebSocketMessage(kind: .text, bytes: entry.ack), to: entry.requester.connection)
            if entry.requester.stable, let ref = entry.ref { context.refs.record(entry.requester.client, ref) }
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
        let historyLimit = context.historyLimit
        do {
            let engine = try await context.committer.perform { store in
                try TableEngine(loaded: store.load(name), historyLimit: historyLimit)
            }
            self.engine = engine
            history = Self.emptyHistory(after: engine.table.version, context: context)
            broken = nil
        } catch {
            broken = "table \(name) could not be reloaded after a storage failure: \(error)"
            context.logger.critical("\(broken!)")
        }
        publishStatus()
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
        let count = subscriberIDs.count
        status.withLock { $0 = (version, count) }
    }

    // MARK: Everything else

    private func handle(_ item: TableWork) async {
        switch item {
        case .intent:
            preconditionFailure("intents are handled by handleIntent")
        case .subscribe(let requester, let ref, let since, let epoch):
            if let refusal = unavailability { return refuse(requester, ref: ref, refusal) }
            await catchUp(requester.connection, since: since, epoch: epoch)
            context.send(.subscribed(ref: ref, status: tableStatus), to: requester.connection)
            if subscribers.updateValue(requester, forKey: requester.connection) == nil {
                subscriberIDs.append(requester.connection)
                context.metrics.subscribers.increment()
            }
            if presence.join(requester.connection, client: requester.client, name: requester.name) { presenceChanged = true }
            publishStatus()
        case .refresh(let requester, let ref, let since, let epoch):
            if let refusal = unavailability { return refuse(requester, ref: ref, refusal) }
            await catchUp(requester.connection, since: since, epoch: epoch)
            context.send(.refreshed(ref: ref, status: tableStatus), to: requester.connection)
        case .unsubscribe(let requester, let ref):
            removeSubscriber(requester.connection)
            context.send(.unsubscribed(ref: ref, table: name), to: requester.connection)
        case .disconnected(let connection):
            removeSubscriber(connection)
        case .presence(let requester, let ref, let change):
            if let refusal = unavailability { return refuse(requester, ref: ref, refusal) }
            guard presence.contains(requester.connection) else {
                return refuse(
                    requester, ref: ref,
                    ProtocolError(.badRequest, "presence on table '\(name)' needs a subscription to it first"))
            }
            let changed: Bool
            switch change {
            case .editing(let on): changed = presence.setEditing(requester.connection, on)
            case .beginEditingRow(let row): changed = presence.beginEditingRow(requester.connection, row: row)
            case .endEditingRow(let row): changed = presence.endEditingRow(requester.connection, row: row)
            }
            if changed { presenceChanged = true }
        case .setRules(let requester, let ref, let patch):
            if let refusal = unavailability { return refuse(requester, ref: ref, refusal) }
            await setRules(requester, ref: ref, patch)
        case .drop(let requester, let ref, let done):
            done.resume(returning: await drop(requester, ref: ref))
        case .barrier(let done):
            done.resume()
        case .committed:
            preconditionFailure("commit outcomes are taken by drain")
        }
    }

    private var tableStatus: ServerMessage.TableStatus {
        .init(table: name, version: engine.table.version, epoch: epochText, rules: engine.table.rules)
    }

    private func removeSubscriber(_ connection: WebSocketConnectionID) {
        if subscribers.removeValue(forKey: connection) != nil {
            subscriberIDs.removeAll { $0 == connection }
            context.metrics.subscribers.decrement()
            publishStatus()
        }
        if presence.leave(connection) { presenceChanged = true }
    }

    /// Sends the presence list now if the last one went out at least ``presenceInterval`` ago, otherwise once the
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
        presenceChanged = false
        lastPresenceBroadcast = now
        context.send(.presence(table: name, clients: presence.clients), to: subscriberIDs)
    }

    private func broadcastScheduledPresence() {
        presenceBroadcastScheduled = false
        if presenceChanged { broadcastPresenceWhenDue() }
    }

    /// Brings a client from `since` (in epoch `epoch`) to the current version: the missed updates from memory or
    /// the store's log when they are all there, otherwise a snapshot.
    private func catchUp(_ connection: WebSocketConnectionID, since: UInt64?, epoch: String?) async {
        let current = engine.table.version
        if let since, epoch == epochText, since <= current {
            if since == current { return }
            if let messages = history.messages(after: since) {
                for message in messages { context.transport.send(message, to: connection) }
                return
            }
            let name = name
            let entries = try? await context.committer.perform { try $0.logEntries(name, after: Int64(since)) }
            if let entries, entries.count == Int(current - since), entries.first?.version == Int64(since + 1),
                let updates = try? entries.map({ entry in
                    ServerMessage.update(
                        .init(
                            table: name, version: UInt64(entry.version), originClient: entry.originClient,
                            originRef: entry.originRef, batch: try Batch(json: JSONValue(parsing: entry.batch))))
                })
            {
                for update in updates { context.send(update, to: connection) }
                return
            }
        }
        context.send(
            .snapshot(
                table: name, version: current, epoch: epochText, rules: engine.table.rules,
                sections: engine.table.sections), to: connection)
    }

    private func setRules(_ requester: Requester, ref: String?, _ patch: RulesPatch) async {
        let rules = patch.applied(to: engine.table.rules)
        let name = name
        let text = rules.json.jsonText
        do {
            try await context.committer.perform { try $0.setRules(text, of: name) }
        } catch {
            return refuse(requester, ref: ref, ProtocolError(.unavailable, "the rules could not be stored: \(error)"))
        }
        engine.setRules(rules)
        context.send(.rules(table: name, rules: rules), to: subscriberIDs)
        context.send(.ack(.init(ref: ref, table: name, version: engine.table.version)), to: requester.connection)
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
            refuse(requester, ref: ref, ProtocolError(.unavailable, "the table could not be dropped: \(error)"))
            return false
        }
        dropped = true
        context.send(.dropped(table: name), to: subscriberIDs)
        context.metrics.subscribers.decrement(by: Double(subscriberIDs.count))
        subscribers.removeAll()
        subscriberIDs.removeAll()
        presence = PresenceBoard()
        context.send(.ack(.init(ref: ref, table: name, version: engine.table.version)), to: requester.connection)
        publishStatus()
        return true
    }
}
