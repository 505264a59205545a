import TableModel
import TableStore
import TablecastProtocol
import WebSocketTransport

/// Intents resolved and applied in memory, waiting for their shared commit: what each one's answer is, and who
/// else is waiting for it.
struct PendingGroup {
    /// One intent that changed the table.
    struct Entry {
        var requester: Requester
        var ref: String?
        /// What `ref` was claimed for in the registry (stable clients' refs only).
        var claim: RefRegistry.Claim?
        var use: RefUse?
        var update: WebSocketMessage
        var ack: [UInt8]
        /// Rows it deletes that someone is editing: their presence is cleared once it is committed.
        var editedRowsDeleted: [String] = []
    }

    /// What the group took, kept to resolve it again (see ``GroupReplay``).
    struct Source {
        var requester: Requester
        var ref: String?
        var base: UInt64?
        var intent: Intent
    }

    /// An answer that must not overtake the group's acks (a no-op resolved against its uncommitted state).
    struct Deferred {
        var connection: WebSocketConnectionID
        var ref: String?
        var message: ServerMessage
    }

    var records: [CommitRecord] = []
    var entries: [Entry] = []
    /// (owner, ref) of the entries, so a retry that arrives before the commit gets the same ack.
    var refs: [RefKey: Int] = [:]
    var duplicates: [(connection: WebSocketConnectionID, entry: Int)] = []
    /// What the group took, to resolve it again if another node beats it to its versions.
    var replay: GroupReplay<Source>
    var deferred: [Deferred] = []

    /// Nothing to store and nobody to answer.
    var isEmpty: Bool { entries.isEmpty && deferred.isEmpty }

    /// `capacity`: room for that many entries, so that they need not grow one by one (rehashing `refs` each time).
    init(recording: Bool, capacity: Int = 0) {
        replay = GroupReplay(recording: recording)
        records.reserveCapacity(capacity)
        entries.reserveCapacity(capacity)
        refs.reserveCapacity(capacity)
    }

    /// The entry `key` names, when it is a retry of it: nil when no entry has the ref; `ref_reused` when one has it
    /// for another intent.
    func retried(_ key: RefKey, _ use: RefUse) throws(ProtocolError) -> Int? {
        guard let index = refs[key] else { return nil }
        guard let prior = entries[index].use, prior == use else {
            throw IntentRef.reused(key.ref, of: key.owner.client, by: entries[index].use ?? use)
        }
        return index
    }
}

extension PendingGroup.Entry {
    /// The entry and log record of `resolution`, just applied to `table`: its update, its ack, and what the log
    /// keeps of it (the ack and intent only for a stable client's ref, for retries; a snapshot every
    /// `snapshotInterval` versions).
    static func committing(
        _ resolution: Resolution, of source: PendingGroup.Source, on table: Table, named name: String, epoch: Int64,
        ack: ServerMessage, claim: RefRegistry.Claim?, use: RefUse?, snapshotInterval: UInt64,
        editedRowsDeleted: [String]
    ) -> (PendingGroup.Entry, CommitRecord) {
        let requester = source.requester
        let keepsRef = claim != nil
        let update = ServerMessage.Update(
            table: name, version: resolution.version, originClient: requester.client, originRef: source.ref,
            batch: resolution.batch)
        let ackBytes = ack.encoded
        let batchJSON = resolution.batch.jsonBytes
        let record = CommitRecord(
            table: name, version: Int64(resolution.version), batch: String(decoding: batchJSON, as: UTF8.self),
            originClient: requester.client, originRef: keepsRef ? source.ref : nil, time: ServerContext.now(),
            ack: keepsRef ? String(decoding: ackBytes, as: UTF8.self) : "",
            snapshot: resolution.version % snapshotInterval == 0 ? table.json.jsonText : nil,
            principal: requester.principal, intent: keepsRef ? use?.intent.stored ?? "" : "",
            originName: requester.name ?? "",
            epoch: epoch, originUser: requester.user ?? "")
        let entry = PendingGroup.Entry(
            requester: requester, ref: source.ref, claim: claim, use: use,
            update: WebSocketMessage(kind: .text, bytes: update.encoded(batchJSON: batchJSON)), ack: ackBytes,
            editedRowsDeleted: editedRowsDeleted)
        return (entry, record)
    }
}
