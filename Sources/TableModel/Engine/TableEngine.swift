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
/// A replica or a restarted server rebuilds it with ``init(snapshot:replaying:historyLimit:historyByteLimit:)``.
///
/// Of each batch it keeps only what rebasing a stale intent through it needs (where sections, rows and gaps go,
/// and the ids of deleted rows), not the batch's values: a batch reloading a megabyte of rows costs the history a
/// few hundred bytes. The history is bounded by count and by those bytes.
public struct TableEngine: Sendable {
    /// The current table.
    public private(set) var table: Table
    /// How many committed batches are kept for rebasing stale intents.
    public let historyLimit: Int
    /// The most bytes (estimated, see ``historyBytes``) the kept batches' layouts may hold.
    public let historyByteLimit: Int

    /// What rebasing through one committed batch needs.
    struct HistoryEntry: Sendable {
        var layout: BatchLayout
        /// The ids of the rows the batch deleted, by their index path before it, so that a stale delete naming
        /// an id can tell "already deleted" from "you meant another row".
        var deletedRowIDs: [RowPath: String]
        /// About how many heap bytes the entry holds.
        let bytes: Int

        init(layout: BatchLayout, deletedRowIDs: [RowPath: String]) {
            self.layout = layout
            self.deletedRowIDs = deletedRowIDs
            bytes = 64 + layout.heapBytes + deletedRowIDs.reduce(64) { $0 + 48 + $1.value.utf8.count }
        }
    }

    /// What rebasing needs of the last committed batches, oldest first: at most `historyLimit` of them and
    /// `historyByteLimit` bytes.
    private var history = HistoryLog()

    /// Creates an engine for `table` with no history.
    public init(table: Table, historyLimit: Int = 10_000, historyByteLimit: Int = .max) {
        precondition(historyLimit >= 0 && historyByteLimit >= 0, "history limits must not be negative")
        self.table = table
        self.historyLimit = historyLimit
        self.historyByteLimit = historyByteLimit
    }

    /// Rebuilds an engine from a snapshot and the batches committed after it (from the log), in order. The
    /// replayed batches become the history, so the oldest base accepted is the snapshot's version (or later, if
    /// more than the history's limits were replayed).
    public init(
        snapshot: Table, replaying batches: some Sequence<Batch>, historyLimit: Int = 10_000,
        historyByteLimit: Int = .max
    ) throws(TableError) {
        self.init(table: snapshot, historyLimit: historyLimit, historyByteLimit: historyByteLimit)
        for batch in batches { try apply(batch) }
    }

    /// About how many heap bytes the history holds: what its layouts and deleted ids take, not the batches' values,
    /// which it does not keep.
    public var historyBytes: Int { history.bytes }

    /// Drops the oldest history until it holds at most `bytes` (memory is short): stale intents from before then
    /// are refused as `stale`.
    public mutating func trimHistory(toBytes bytes: Int) {
        history.trim(toBytes: bytes)
    }

    /// Replaces the table's rules. Rules are not versioned: the history stays, and intents resolved from now on
    /// follow the new rules.
    public mutating func setRules(_ rules: TableRules) {
        table.rules = rules
    }

    /// The oldest base version an intent may have.
    public var oldestBase: UInt64 { table.version - UInt64(history.count) }

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
            throw .stale(
                nil,
                "the resolution was made at version \(resolution.tableVersion) but the table is at version \(table.version)"
            )
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
        history.append(
            HistoryEntry(layout: layout, deletedRowIDs: deletedRowIDs), keeping: historyLimit,
            byteLimit: historyByteLimit)
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
        for (index, reload) in client.reloadSections.enumerated() {
            try check(reload.section, intent.label(.reloadSections, index))
        }
        for (index, move) in client.moveSections.enumerated() {
            try check(move.from, intent.label(.moveSections, index))
        }
        for (index, ref) in client.deleteRows.enumerated() { try check(ref, intent.label(.deleteRows, index)) }
        for (index, reload) in client.reloadRows.enumerated() {
            try check(reload.row, intent.label(.reloadRows, index))
        }
        for (index, move) in client.moveRows.enumerated() { try check(move.from, intent.label(.moveRows, index)) }
        for (index, patch) in client.patchRows.enumerated() { try check(patch.row, intent.label(.patchRows, index)) }
    }
}
