/// The authoritative state machine of one table: the table plus the last batches committed to it.
///
/// It turns intents into committed batches in two steps so that the server can persist in between:
///
/// ```swift
/// let resolution = try engine.resolve(intent, base: base)   // pure: nothing changes, throws TableError
/// try store.append(resolution.batch, version: resolution.version)
/// try engine.commit(resolution)
/// ```
///
/// A replica or a restarted server rebuilds it with ``init(snapshot:replaying:historyLimit:)``, and subscribers
/// catch up with ``batches(since:)``.
public struct TableEngine: Sendable {
    /// The current table.
    public private(set) var table: Table
    /// How many committed batches are kept for rebasing stale intents and for catch-up.
    public let historyLimit: Int

    /// One committed batch and what rebasing through it needs.
    struct HistoryEntry: Sendable {
        var batch: Batch
        var layout: BatchLayout
        /// The ids of the rows the batch deleted, by their index path before it, so that a stale delete naming
        /// an id can tell "already deleted" from "you meant another row".
        var deletedRowIDs: [RowPath: String]
    }

    /// The last `historyLimit` committed batches, oldest first.
    private var history = HistoryLog()

    /// Creates an engine for `table` with no history.
    public init(table: Table, historyLimit: Int = 10_000) {
        precondition(historyLimit >= 0, "historyLimit must not be negative")
        self.table = table
        self.historyLimit = historyLimit
    }

    /// Rebuilds an engine from a snapshot and the batches committed after it (from the log), in order. The
    /// replayed batches become the history, so the oldest base accepted is the snapshot's version (or later, if
    /// more than `historyLimit` batches were replayed).
    public init(snapshot: Table, replaying batches: some Sequence<Batch>, historyLimit: Int = 10_000) throws(TableError) {
        self.init(table: snapshot, historyLimit: historyLimit)
        for batch in batches { try apply(batch) }
    }

    /// Replaces the table's rules. Rules are not versioned: the history stays, and intents resolved from now on
    /// follow the new rules.
    public mutating func setRules(_ rules: TableRules) {
        table.rules = rules
    }

    /// The oldest base version an intent may have, and the oldest version ``batches(since:)`` can catch up from.
    public var oldestBase: UInt64 { table.version - UInt64(history.count) }

    /// The batches committed after `version`, oldest first, for a subscriber that has the table at `version`.
    /// Throws `stale` when `version` is older than the kept history or newer than the table.
    public func batches(since version: UInt64) throws(TableError) -> [Batch] {
        try entries(after: version, at: nil).map(\.batch)
    }

    /// Resolves `intent`, made by a client that saw the table at version `base` (`nil`: the current version),
    /// without changing anything. A stale base is rebased through the batches committed since.
    public func resolve(_ intent: Intent, base: UInt64? = nil) throws(TableError) -> Resolution {
        let client = intent.clientBatch
        let draft: Draft
        if let base, base != table.version {
            draft = try rebase(client, intent: intent, from: base, through: entries(after: base, at: intent.name))
        } else {
            try checkIDs(client, intent: intent)
            draft = Draft(client)
        }
        return try finish(draft, intent: intent)
    }

    /// Commits a resolution made by ``resolve(_:base:)``. A no-op commits nothing; otherwise this throws `stale`
    /// if the engine has moved on since the resolution was made (resolve and commit must not interleave with
    /// other commits).
    public mutating func commit(_ resolution: Resolution) throws(TableError) {
        guard !resolution.isNoop else { return }
        guard resolution.tableVersion == table.version else {
            throw .stale(nil, "the resolution was made at version \(resolution.tableVersion) but the table is at version \(table.version)")
        }
        try apply(resolution.batch)
    }

    /// Applies an already committed batch (replaying the log, or following another authority), validating it
    /// like ``Table/apply(_:)`` and recording it in the history. An empty batch changes nothing.
    public mutating func apply(_ batch: Batch) throws(TableError) {
        guard !batch.isEmpty else { return }
        var deletedRowIDs: [RowPath: String] = [:]
        for path in batch.deleteRows { deletedRowIDs[path] = table.row(at: path)?.id }
        let layout = try table.applyReturningLayout(batch)
        history.append(HistoryEntry(batch: batch, layout: layout, deletedRowIDs: deletedRowIDs), keeping: historyLimit)
    }

    /// Sets the id generator to the first id `batch` creates, if it creates any: a client's replica does not
    /// know the server's generator (snapshots carry no `nextID`), and ``apply(_:)`` checks ids follow it.
    mutating func alignIDs(to batch: Batch) {
        if let first = batch.firstCreatedNumber { table.nextID = first }
    }

    /// The history entries after `version`; `at` names the entry for messages.
    func entries(after version: UInt64, at: String?) throws(TableError) -> HistoryLog.Suffix {
        guard version <= table.version else {
            throw .stale(at, "version \(version) is newer than the table's version \(table.version)")
        }
        guard version >= oldestBase else {
            throw .stale(at, "version \(version) is older than the kept history, which starts at version \(oldestBase)")
        }
        return history.suffix(Int(table.version - version))
    }

    /// Checks the ids an intent made at the current version gives against the rows and sections it names.
    private func checkIDs(_ client: ClientBatch, intent: Intent) throws(TableError) {
        func check(_ ref: SectionRef, _ entry: String) throws(TableError) {
            if let id = ref.id, table.sections.indices.contains(ref.index), table.sections[ref.index].id != id {
                throw .conflict(entry, "section \(ref.index) is \(table.sections[ref.index].id), not \(id)")
            }
        }
        func check(_ ref: RowRef, _ entry: String) throws(TableError) {
            if let id = ref.id, let row = table.row(at: ref.path), row.id != id {
                throw .conflict(entry, "row \(ref.path) is \(row.id), not \(id)")
            }
        }
        for (index, ref) in client.deleteSections.enumerated() { try check(ref, intent.label(.deleteSections, index)) }
        for (index, reload) in client.reloadSections.enumerated() { try check(reload.section, intent.label(.reloadSections, index)) }
        for (index, move) in client.moveSections.enumerated() { try check(move.from, intent.label(.moveSections, index)) }
        for (index, ref) in client.deleteRows.enumerated() { try check(ref, intent.label(.deleteRows, index)) }
        for (index, reload) in client.reloadRows.enumerated() { try check(reload.row, intent.label(.reloadRows, index)) }
        for (index, move) in client.moveRows.enumerated() { try check(move.from, intent.label(.moveRows, index)) }
    }
}
