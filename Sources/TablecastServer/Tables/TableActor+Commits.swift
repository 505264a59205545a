import TableModel
import TableStore
import TablecastProtocol
import WebSocketTransport

/// Intents and commits: the actor's side of the ``CommitPipeline`` (resolving intents into it and performing the
/// actions it returns) and of the ``TableReplication`` (following other nodes, reloading).
extension TableActor {
    /// Resolves an intent into the pending group. `checkStore`: look its ref up in the store whatever the registry
    /// says (a rebase after a conflict, which may have been another node storing the same ref).
    func handleIntent(_ requester: Requester, ref: String?, base: UInt64?, _ intent: Intent, checkStore: Bool = false)
        async
    {
        if broken != nil { await reload() }
        if let refusal = unavailability {
            context.metrics.intent(refusal.code == .unavailable ? .unavailable : .rejected, table: name)
            return refuse(requester, ref: ref, refusal)
        }
        let source = PendingGroup.Source(requester: requester, ref: ref, base: base, intent: intent)
        let use = ref.map { _ in RefUse(table: name, epoch: epoch, intent: IntentRef.fingerprint(intent, on: name)) }
        if let ref, let use {
            do {
                if try await isRetry(requester, RefKey(owner: requester.refOwner, ref: ref), use, source, checkStore) {
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
        if resolution.isNoop {
            context.metrics.intent(.noop, table: name)
            return pipeline.takeNoop(.init(connection: requester.connection, ref: ref, message: ack), source: source)
        }
        let keepsRef = requester.stable && ref != nil
        if keepsRef, let ref, let use, let prior = context.refs.claim(requester.refOwner, ref, for: use),
            !prior.admits(use)
        {
            // Claimed meanwhile by the same client on another table (the check above found it free).
            context.metrics.intent(.rejected, table: name)
            return refuse(requester, ref: ref, IntentRef.reused(ref, of: requester.client, by: prior, for: use))
        }
        let editedRowsDeleted = presence.anyRowEdited ? deletedRows(resolution.batch).filter(presence.isEdited) : []
        pipeline.willChange(engine)
        do {
            try engine.commit(resolution)
        } catch {
            // resolve() just succeeded against this very state, so this is a bug; say so rather than crash.
            context.logger.error(
                "commit of a fresh resolution failed", metadata: ["table": "\(name)", "error": "\(error)"])
            return refuse(requester, ref: ref, ProtocolError(.internal, "the table could not apply a resolved change"))
        }
        let update = ServerMessage.Update(
            table: name, version: resolution.version, originClient: requester.client, originRef: ref,
            batch: resolution.batch)
        let ackBytes = ack.encoded
        let batchJSON = resolution.batch.jsonBytes
        let record = CommitRecord(
            table: name, version: Int64(resolution.version), batch: String(decoding: batchJSON, as: UTF8.self),
            originClient: requester.client, originRef: keepsRef ? ref : nil, time: ServerContext.now(),
            ack: keepsRef ? String(decoding: ackBytes, as: UTF8.self) : "",
            snapshot: resolution.version % context.snapshotInterval == 0 ? engine.table.json.jsonText : nil,
            principal: requester.principal, intent: keepsRef ? use?.intent ?? "" : "", originName: requester.name ?? "",
            epoch: epoch, originUser: requester.user ?? "")
        let entry = PendingGroup.Entry(
            requester: requester, ref: ref, claim: keepsRef ? use : nil, use: use,
            update: WebSocketMessage(kind: .text, bytes: update.encoded(batchJSON: batchJSON)), ack: ackBytes,
            editedRowsDeleted: editedRowsDeleted)
        pipeline.take(entry, record: record, source: source)
    }

    /// Whether the intent is a retry, answered or to be answered with the original's ack: of one not committed
    /// yet (its ack follows the commit), or of a committed one (its stored ack is sent now). Throws `ref_reused`
    /// when the ref names another intent, and `unavailable` when the store cannot be read: a retry is never taken
    /// for a new intent on a guess.
    private func isRetry(
        _ requester: Requester, _ key: RefKey, _ use: RefUse, _ source: PendingGroup.Source, _ checkStore: Bool
    ) async throws(ProtocolError) -> Bool {
        if try pipeline.takeRetry(key, use, from: requester.connection, source: source) { return true }
        // Anonymous clients' refs are never stored, so neither the registry nor the store knows them.
        guard requester.stable else { return false }
        let lookup = try IntentRef.lookup(
            key, use, known: context.refs.use(key.owner, key.ref), ownerLoaded: context.refs.isLoaded(key.owner),
            checkStore: checkStore)
        guard lookup == .store else { return false }
        let stored: StoredAck?
        do {
            stored = try await context.committer.perform {
                try $0.ack(client: key.owner.client, ref: key.ref, principal: key.owner.principal)
            }
        } catch {
            throw context.unavailable(
                "ref '\(key.ref)' could not be looked up, nothing was applied (send it again)", error, table: name)
        }
        guard try IntentRef.answer(stored: stored, for: key, use), let stored else { return false }
        context.transport.send(
            WebSocketMessage(kind: .text, bytes: IntentRef.ack(stored.ack, withEpoch: epochText)),
            to: requester.connection)
        return true
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

    // MARK: The pipeline's actions

    /// Hands the pending group to the committer unless a group is in flight (a group of no-ops only is answered
    /// at once).
    func submitPending() {
        if let action = pipeline.submit() { perform(action) }
    }

    /// Finishes the group in flight if the committer is done with it.
    func finishCommitIfDone() async {
        guard pipeline.isWriting, let outcome = commitOutcome.withLock({ $0.take() }) else { return }
        for action in pipeline.finish(outcome) {
            switch action {
            case .write, .publish: perform(action)
            case .rebase(let replay, let entries, let checkingRefs):
                await rebase(replay, entries, checkingRefs: checkingRefs)
            case .fail(let failed, let lost, let error): await fail(failed, lost, error)
            }
        }
    }

    private func perform(_ action: CommitPipeline.Action) {
        switch action {
        case .write(let records):
            let last = UInt64(records.last!.version)
            context.committer.submit(records) { [self] outcome in
                if case .success = outcome { watermarks.withLock { $0.stored(upTo: last) } }
                commitOutcome.withLock { $0 = outcome }
                enqueue(.committed)
            }
        case .publish(let group):
            publish(group)
        case .rebase, .fail:
            preconditionFailure("only finishing a commit rebases or fails")
        }
    }

    /// Fans out a durable group's updates and sends its acks, each originator's after its own update.
    private func publish(_ group: PendingGroup) {
        for (entry, record) in zip(group.entries, group.records) {
            fanOut(
                entry.update, version: UInt64(record.version), time: record.time, originName: record.originName,
                originUser: record.originUser)
            for row in entry.editedRowsDeleted { presence.clearRow(row) }
            context.transport.send(WebSocketMessage(kind: .text, bytes: entry.ack), to: entry.requester.connection)
            // Claimed when resolved; claimed again in case the owner's last connection closed meanwhile.
            if let ref = entry.ref, let claim = entry.claim {
                _ = context.refs.claim(entry.requester.refOwner, ref, for: claim)
            }
            context.metrics.intent(.committed, table: name)
        }
        for (connection, index) in group.duplicates {
            context.transport.send(WebSocketMessage(kind: .text, bytes: group.entries[index].ack), to: connection)
        }
        for answer in group.deferred { context.send(answer.message, to: answer.connection) }
        if let last = group.records.last { publishStatus(version: UInt64(last.version)) }
    }

    /// A committed update: kept for catch-ups and history, sent to every subscriber.
    private func fanOut(
        _ update: WebSocketMessage, version: UInt64, time: Int64, originName: String, originUser: String
    ) {
        history.append(update)
        context.recentChanges.append(
            name, epoch: epoch, version: version, time: time, originName: originName, originUser: originUser,
            update: update)
        guard !subscribers.isEmpty else { return }
        context.transport.send(update, to: subscribers.ids)
        context.metrics.deliveries.increment(by: Int64(subscribers.count))
    }

    /// The refs claimed when `entries` were resolved; each is claimed again if it is resolved anew.
    private func releaseClaims(_ entries: [PendingGroup.Entry]) {
        for entry in entries {
            if let ref = entry.ref, let claim = entry.claim {
                context.refs.release(entry.requester.refOwner, ref, use: claim)
            }
        }
    }

    /// A storage failure: nothing of `failed` was stored, nor of `lost` (resolved on top of it). Every intent of
    /// both gets `unavailable`, and the table goes back to the committed state.
    private func fail(_ failed: PendingGroup, _ lost: PendingGroup, _ error: any Error) async {
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
        guard let committed = failed.replay.engineBefore else { return await reload() }
        engine = committed
        snapshots.forget()
        publishStatus()
    }

    private func refuseAll(_ group: PendingGroup, _ refusal: ProtocolError) {
        for entry in group.entries {
            context.metrics.intent(.unavailable, table: name)
            refuse(entry.requester, ref: entry.ref, refusal)
        }
        for (connection, index) in group.duplicates {
            context.refuse(connection, refusal, ref: group.entries[index].ref)
        }
        for answer in group.deferred { context.refuse(answer.connection, refusal, ref: answer.ref) }
    }

    /// Another node committed first (or stored a ref of the group: a retry it took): nothing was stored. Go back to
    /// the state before, follow the other nodes' commits, and resolve every intent `replay` took again: a stale
    /// intent is rebased as any other. They go out with the next group and are acknowledged once it is stored.
    private func rebase(_ replay: GroupReplay<PendingGroup.Source>, _ entries: [PendingGroup.Entry], checkingRefs: Bool)
        async
    {
        releaseClaims(entries)
        engine = replay.engineBefore!
        snapshots.forget()
        context.metrics.rebases.increment()
        // The store reserved the table for the rebased group: with nothing to commit, other nodes need not wait.
        defer { if pipeline.pending.records.isEmpty { context.committer.release(name) } }
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

    // MARK: Replication

    /// Applies what other nodes committed after the engine's version, read from the store's log, and fans it out
    /// in version order. A log that no longer reaches back (pruned) reloads the table and sends subscribers a
    /// snapshot. False when the store could not be read; the table then keeps serving the committed state.
    @discardableResult
    func follow() async -> Bool {
        let followed: FollowedBatches
        switch await replication.read(after: engine.table.version, table: name) {
        case .followed(let batches):
            followed = batches
        case .gap:
            await reload()
            return broken == nil
        case .failed(let error):
            // The engine is at a committed version (the pipeline is idle): it is served as it is.
            context.logFailure("could not read other nodes' commits", error, table: name)
            return false
        }
        do {
            try followed.apply(to: &engine)
        } catch {
            context.logger.error(
                "another node's batch does not apply", metadata: ["table": "\(name)", "error": "\(error)"])
            await reload()
            return broken == nil
        }
        for entry in followed.entries {
            fanOut(
                entry.update, version: entry.version, time: entry.time, originName: entry.originName,
                originUser: entry.originUser)
        }
        let version = engine.table.version
        watermarks.withLock { $0.stored(upTo: version) }
        publishStatus()
        return true
    }

    /// Replaces the in-memory state, which holds changes that were never stored, with the store's. A table that
    /// cannot be read is broken: it refuses work with `unavailable`, and tries again with the next intent or
    /// subscribe, so that it serves as before once the store answers (a restarted PostgreSQL, a freed disk).
    func reload() async {
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
            watermarks.withLock { $0.stored(upTo: engine.table.version) }
            broken = nil
            if replication.reloadMayBringNews && engine.table.version != previous && !subscribers.isEmpty {
                let message = shareSnapshot()
                context.transport.send(message, to: subscribers.ids)
            }
            publishStatus()
        } catch {
            broken =
                context.unavailable(
                    "table '\(name)' could not be reloaded after a storage failure", error, table: name,
                    level: .critical
                ).message
            // The engine still holds the changes that were never stored: list the last version that was.
            publishStatus(version: watermarks.withLock { $0.stored })
        }
    }
}
