import TableModel
import TableStore
import TablecastProtocol
import WebSocketTransport

/// The commit pipeline of one table, as a value: intents are resolved into the pending group while at most one
/// group is being written; when the written group is durable it is published and the pending one written next.
///
/// It decides and does nothing itself: each step returns the ``Action``s its owner performs (hand records to the
/// committer, fan a group out and acknowledge it, resolve groups again, refuse them), so that tests can drive it
/// step by step without a store or a socket.
struct CommitPipeline {
    /// What the table must do next.
    enum Action {
        /// Hand the pending group's records to the committer; its outcome comes back through ``finish(_:)``.
        case write([CommitRecord])
        /// Fan out a durable group's updates and send its answers (a group of no-ops only needs no storing).
        case publish(PendingGroup)
        /// Another node committed first, or stored a ref of the group: nothing of `entries` was stored. Go back to
        /// `replay`'s engine and resolve its intents again. `checkingRefs`: look their refs up in the store (one
        /// of them was the conflict).
        case rebase(replay: GroupReplay<PendingGroup.Source>, entries: [PendingGroup.Entry], checkingRefs: Bool)
        /// The store failed: nothing of `failed` was stored, nor of `lost`, which was resolved on top of it.
        case fail(failed: PendingGroup, lost: PendingGroup, error: any Error)
    }

    /// Whether groups record what they took and the engine before them (shared stores: see ``GroupReplay``).
    let recording: Bool
    /// Intents resolved and applied in memory since the group in flight was submitted.
    private(set) var pending: PendingGroup
    /// The group the committer is writing; at most one per table, so a failure affects only it and `pending`.
    private(set) var inFlight: PendingGroup?

    init(recording: Bool) {
        self.recording = recording
        pending = PendingGroup(recording: recording)
    }

    /// Nothing is being written or waiting to be: the engine is at the committed version.
    var isIdle: Bool { inFlight == nil && pending.isEmpty }
    /// A group is being written.
    var isWriting: Bool { inFlight != nil }

    /// Takes a retry of an intent not committed yet (in flight or pending) and returns true: its sender gets the
    /// original's ack once that is stored. False when no uncommitted intent has the ref; `ref_reused` when one has
    /// it for another intent.
    mutating func takeRetry(
        _ key: RefKey, _ use: RefUse, from connection: WebSocketConnectionID, source: PendingGroup.Source
    ) throws(ProtocolError) -> Bool {
        if let index = try inFlight?.retried(key, use) {
            inFlight!.duplicates.append((connection, index))
            inFlight!.replay.took(source)
            return true
        }
        if let index = try pending.retried(key, use) {
            pending.duplicates.append((connection, index))
            pending.replay.took(source)
            return true
        }
        return false
    }

    /// An intent that changes nothing: answered with `answer` after the acks before it.
    mutating func takeNoop(_ answer: PendingGroup.Deferred, source: PendingGroup.Source) {
        pending.replay.took(source)
        pending.deferred.append(answer)
    }

    /// The table's engine is about to apply the next intent of the pending group.
    mutating func willChange(_ engine: @autoclosure () -> TableEngine) {
        pending.replay.willChange(engine())
    }

    /// An intent applied in memory, with what is stored for it. Both are consumed: the table makes them for this
    /// call, and taking them as borrowed copied each one whole into the group. `key`: the entry's ref with its
    /// owner, nil when it has no ref (the key its retries were looked up by, already hashed).
    mutating func take(
        _ entry: consuming PendingGroup.Entry, key: RefKey?, record: consuming CommitRecord,
        source: PendingGroup.Source
    ) {
        pending.replay.took(source)
        if let key { pending.refs[key] = pending.entries.count }
        pending.records.append(record)
        pending.entries.append(entry)
    }

    /// Submits the pending group unless a group is being written: its records to be written, or, for no-ops only,
    /// to be answered at once.
    mutating func submit() -> Action? {
        guard inFlight == nil, !pending.isEmpty else { return nil }
        let group = pending
        // A busy table's groups are alike in size: the next one is likely as large as this.
        pending = PendingGroup(recording: recording, capacity: group.entries.count)
        guard !group.records.isEmpty else { return .publish(group) }
        inFlight = group
        return .write(group.records)
    }

    /// The group in flight was written, or failed with `outcome`'s error.
    mutating func finish(_ outcome: Result<Void, any Error>) -> [Action] {
        guard let group = inFlight else { return [] }
        inFlight = nil
        switch outcome {
        case .success:
            // The group resolved meanwhile goes to the committer before this one is fanned out, so the committer
            // does not wait for the fan-out. A group of no-ops only is answered at once instead, so it goes after
            // this group's answers.
            var actions: [Action] = []
            if !pending.records.isEmpty, let write = submit() { actions.append(write) }
            actions.append(.publish(group))
            if let next = submit() { actions.append(next) }
            return actions
        case .failure(let error as StoreError)
        where [.conflict, .duplicateRef].contains(error.kind) && group.replay.canRebase:
            // Refs are looked up again only when one of them was the conflict: a lookup per intent is costly,
            // and a ref stored elsewhere that a version conflict hid fails the next attempt as `.duplicateRef`.
            let rebase = Action.rebase(
                replay: group.replay.followed(by: pending.replay), entries: group.entries + pending.entries,
                checkingRefs: error.kind == .duplicateRef)
            pending = PendingGroup(recording: recording)
            return [rebase]
        case .failure(let error):
            let lost = pending
            pending = PendingGroup(recording: recording)
            return [.fail(failed: group, lost: lost, error: error)]
        }
    }
}
