import Synchronization
import TableModel
import TableStore
import TablecastProtocol
import WebSocketTransport

/// A table's engine and how it changes: the I/O of its ``CommitPipeline`` (intents are resolved into the pending
/// group, retries answered as ``IntentRef`` says, groups handed to the committer, a durable group fanned out and
/// acknowledged, a failed or beaten group undone, with what to do next handed back to the table's actor as a
/// ``Followup``), and of its ``TableReplication`` (other nodes' commits followed, the table read again from the
/// store: `TableCommits+Replication.swift`). Owned by the table's actor, and used only on it.
final class TableCommits {
    /// What the table's actor does after a group in flight finished.
    enum Followup {
        /// Another node committed first: follow the store, then resolve `sources` again (`checkingRefs`: look
        /// their refs up in the store).
        case rebase([PendingGroup.Source], checkingRefs: Bool)
        /// The store failed; the engine is back at the committed state.
        case undone
        /// The store failed, and the committed state must be read from it again.
        case reload
    }

    /// The table, with changes of the pending and in-flight groups applied.
    var engine: TableEngine
    private(set) var pipeline: CommitPipeline
    /// Set when the table could not be reloaded after a failed commit: it then refuses work with `unavailable`.
    var broken: String?
    let name: String
    private let epoch: Int64
    private let epochText: String
    let context: ServerContext
    let stored: StoredTable

    init(name: String, epoch: Int64, engine: TableEngine, recording: Bool, context: ServerContext) {
        self.name = name
        self.epoch = epoch
        self.epochText = Epoch.text(epoch)
        self.engine = engine
        self.context = context
        stored = StoredTable(name: name, context: context)
        pipeline = CommitPipeline(recording: recording)
    }

    // MARK: Resolving intents

    /// Resolves an intent into the pending group, or answers it (a retry, a no-op, a refusal). `checkStore`: look
    /// its ref up in the store whatever the registry says (a rebase after a conflict, which may have been another
    /// node storing the same ref).
    nonisolated(nonsending) func take(
        _ source: PendingGroup.Source, checkStore: Bool, audience: TableAudience
    ) async {
        let (requester, ref) = (source.requester, source.ref)
        let use = ref.map { _ in
            RefUse(table: name, epoch: epoch, intent: IntentRef.fingerprint(source.intent, on: name))
        }
        let key = ref.map { RefKey(owner: requester.refOwner, ref: $0) }
        if let key, let use {
            do {
                if try await isRetry(source, key, use, checkStore) {
                    return context.metrics.intent(.duplicate, table: name)
                }
            } catch {
                return refuse(source, error, counted: .rejected)
            }
        }
        let resolution: Resolution
        do {
            resolution = try engine.resolve(source.intent, base: source.base)
        } catch {
            return refuse(source, ProtocolError(error), counted: .rejected)
        }
        let ack = ServerMessage.ack(.init(ref: ref, table: name, epoch: epochText, resolution: resolution))
        if resolution.isNoop {
            context.metrics.intent(.noop, table: name)
            return pipeline.takeNoop(.init(connection: requester.connection, ref: ref, message: ack), source: source)
        }
        var claim: RefRegistry.Claim?
        if requester.stable, let ref, let use {
            let claimed = context.refs.claim(requester.refOwner, ref, for: use)
            if let prior = claimed.prior, !prior.admits(use) {
                // Claimed meanwhile by the same client on another table (the check above found it free).
                return refuse(
                    source, IntentRef.reused(ref, of: requester.client, by: prior, for: use), counted: .rejected)
            }
            claim = claimed.claim
        }
        let editedRowsDeleted = audience.editedRows(deletedBy: resolution.batch, from: engine.table)
        pipeline.willChange(engine)
        do {
            try engine.commit(resolution)
        } catch {
            // resolve() just succeeded against this very state, so this is a bug; say so rather than crash.
            context.logger.error(
                "commit of a fresh resolution failed", metadata: ["table": "\(name)", "error": "\(error)"])
            return refuse(source, ProtocolError(.internal, "the table could not apply a resolved change"))
        }
        let (entry, record) = PendingGroup.Entry.committing(
            resolution, of: source, on: engine.table, named: name, epoch: epoch, ack: ack, claim: claim,
            use: use,
            snapshotInterval: context.snapshotInterval, editedRowsDeleted: editedRowsDeleted)
        pipeline.take(entry, key: key, record: record, source: source)
    }

    /// Whether the intent is a retry, answered or to be answered with the original's ack: of one not committed
    /// yet (its ack follows the commit), or of a committed one (its stored ack is sent now). Throws `ref_reused`
    /// when the ref names another intent, and `unavailable` when the store cannot be read: a retry is never taken
    /// for a new intent on a guess.
    nonisolated(nonsending) private func isRetry(
        _ source: PendingGroup.Source, _ key: RefKey, _ use: RefUse, _ checkStore: Bool
    ) async throws(ProtocolError) -> Bool {
        let requester = source.requester
        if try pipeline.takeRetry(key, use, from: requester.connection, source: source) { return true }
        // Anonymous clients' refs are never stored, so neither the registry nor the store knows them.
        guard requester.stable else { return false }
        let (known, ownerLoaded) = context.refs.lookup(key.owner, key.ref)
        let lookup = try IntentRef.lookup(key, use, known: known, ownerLoaded: ownerLoaded, checkStore: checkStore)
        guard lookup == .store, let stored = try await stored.ack(for: key),
            try IntentRef.answer(stored: stored, for: key, use)
        else { return false }
        context.transport.send(
            WebSocketMessage(kind: .text, bytes: IntentRef.ack(stored.ack, withEpoch: epochText)),
            to: requester.connection)
        return true
    }

    /// Answers `source` with `refusal`, counted as `outcome`.
    func refuse(_ source: PendingGroup.Source, _ refusal: ProtocolError, counted outcome: ServerMetrics.Outcome? = nil)
    {
        if let outcome { context.metrics.intent(outcome, table: name) }
        context.refuse(source.requester.connection, refusal, ref: source.ref)
    }

    // MARK: The pipeline's actions

    /// Hands the pending group to the committer unless a group is in flight (a group of no-ops only is answered
    /// at once).
    func submitPending(for actor: TableActor, publishingTo audience: TableAudience, _ catchUps: TableCatchUps) {
        if let action = pipeline.submit() { perform(action, for: actor, audience, catchUps) }
    }

    /// Finishes the group in flight with the committer's `outcome`: publishes it and writes the next, or undoes
    /// what the store did not take and says what the actor does next.
    func finish(
        _ outcome: Result<Void, any Error>, for actor: TableActor, publishingTo audience: TableAudience,
        _ catchUps: TableCatchUps
    ) -> [Followup] {
        var followups: [Followup] = []
        for action in pipeline.finish(outcome) {
            switch action {
            case .write, .publish:
                perform(action, for: actor, audience, catchUps)
            case .rebase(let replay, let entries, let checkingRefs):
                releaseClaims(entries)
                engine = replay.engineBefore!
                context.metrics.rebases.increment()
                followups.append(.rebase(replay.sources, checkingRefs: checkingRefs))
            case .fail(let failed, let lost, let error):
                followups.append(fail(failed, lost, error))
            }
        }
        return followups
    }

    private func perform(
        _ action: CommitPipeline.Action, for actor: TableActor, _ audience: TableAudience, _ catchUps: TableCatchUps
    ) {
        switch action {
        case .write(let records):
            let last = UInt64(records.last!.version)
            context.committer.submit(records) { outcome in
                if case .success = outcome { actor.watermarks.withLock { $0.stored(upTo: last) } }
                actor.commitOutcome.withLock { $0 = outcome }
                actor.enqueue(.committed)
            }
        case .publish(let group):
            publish(group, audience, catchUps)
            if let last = group.records.last { actor.listing.set(version: UInt64(last.version)) }
        case .rebase, .fail:
            preconditionFailure("only finishing a commit rebases or fails")
        }
    }

    /// Fans out a durable group's updates, all at once, then sends its acks: each originator's after its own update.
    private func publish(_ group: PendingGroup, _ audience: TableAudience, _ catchUps: TableCatchUps) {
        // Fields by index, here and below: iterating the arrays, or taking an element out to read its fields,
        // copied each entry and record whole.
        let (entries, records) = (group.entries, group.records)
        for index in entries.indices {
            catchUps.keep(
                entries[index].update, version: UInt64(records[index].version), time: records[index].time,
                originName: records[index].originName, originUser: records[index].originUser)
        }
        audience.deliver(entries.map(\.update))
        for index in entries.indices {
            audience.clear(rows: entries[index].editedRowsDeleted)
            let connection = entries[index].requester.connection
            context.transport.send(WebSocketMessage(kind: .text, bytes: entries[index].ack), to: connection)
            // Claimed when resolved, and kept in case an owner was forgotten meanwhile.
            if let ref = entries[index].ref, let claim = entries[index].claim {
                context.refs.keep(entries[index].requester.refOwner, ref, claim)
            }
            context.metrics.intent(.committed, table: name)
        }
        for (connection, index) in group.duplicates {
            context.transport.send(WebSocketMessage(kind: .text, bytes: group.entries[index].ack), to: connection)
        }
        for answer in group.deferred { context.send(answer.message, to: answer.connection) }
    }

    /// The refs claimed when `entries` were resolved; each is claimed again if it is resolved anew.
    private func releaseClaims(_ entries: [PendingGroup.Entry]) {
        for entry in entries {
            if let ref = entry.ref, let claim = entry.claim {
                context.refs.release(entry.requester.refOwner, ref, claim)
            }
        }
    }

    /// A storage failure: nothing of `failed` was stored, nor of `lost` (resolved on top of it). Every intent of
    /// both gets `unavailable`, and the table goes back to the committed state.
    private func fail(_ failed: PendingGroup, _ lost: PendingGroup, _ error: any Error) -> Followup {
        let incident = context.logFailure(
            "could not store a group of changes", error, table: name,
            metadata: ["intents": .stringConvertible(failed.entries.count + lost.entries.count)])
        releaseClaims(failed.entries + lost.entries)
        refuseAll(failed, ProtocolError.notStored(error, incident: incident))
        refuseAll(
            lost,
            ProtocolError.unavailable("the change could not be stored, nothing was applied", error, incident: incident))
        // The engine before the group is the committed table (a shared store's groups record it): it keeps serving
        // reads while the store is down, and follows the store's log once it answers. Otherwise the table is read
        // again from the store.
        guard let committed = failed.replay.engineBefore else { return .reload }
        engine = committed
        return .undone
    }

    private func refuseAll(_ group: PendingGroup, _ refusal: ProtocolError) {
        for entry in group.entries {
            context.metrics.intent(.unavailable, table: name)
            context.refuse(entry.requester.connection, refusal, ref: entry.ref)
        }
        for (connection, index) in group.duplicates {
            context.refuse(connection, refusal, ref: group.entries[index].ref)
        }
        for answer in group.deferred { context.refuse(answer.connection, refusal, ref: answer.ref) }
    }
}
