/// A page of a table's history, read in one transaction with the bounds it lies in.
public struct HistoryPage: Sendable, Equatable {
    /// The table's metadata; `info.version` is the newest version.
    public var info: TableInfo
    /// The oldest kept version: the table at it can be rebuilt, and the log holds every change after it.
    public var oldest: Int64
    /// The log entries asked for that are kept, newest or oldest first as asked.
    public var entries: [LogEntry]
}

/// What rebuilds a table at a past version: the nearest snapshot at or below it and the log up to it.
public struct HistoricalState: Sendable, Equatable {
    /// The table's metadata (its current rules and version).
    public var info: TableInfo
    /// The oldest kept version (see ``HistoryPage/oldest``).
    public var oldest: Int64
    /// The nearest snapshot at or below the version asked for; nil when that version is not kept (older than
    /// `oldest` or newer than `info.version`).
    public var snapshot: Snapshot?
    /// The log after `snapshot` up to the version asked for, in version order.
    public var log: [LogEntry]
}

extension SQLiteTableStore {
    /// Up to `limit` log entries of table `name` with versions in `from...to` that are still kept (after
    /// ``HistoryPage/oldest``, at most the table's version), newest first or oldest first, ending one entry after
    /// the entries whose batches reach `byteLimit` bytes (that one tells where the next page starts). Throws
    /// `.noSuchTable`.
    public func history(
        _ name: String, from: Int64, to: Int64, limit: Int, byteLimit: Int, newestFirst: Bool
    ) throws -> HistoryPage {
        try read("reading the history of table \(name) in \(path)") {
            let (info, oldest) = try historyBounds(name)
            // One literal per order: the connection caches statements by their literal.
            let sql: StaticString =
                newestFirst
                ? """
                SELECT version, batch, origin_client, origin_ref, time, origin_name, origin_user FROM log
                WHERE table_name = ?1 AND version > ?2 AND version >= ?3 AND version <= ?4
                ORDER BY version DESC LIMIT ?5
                """
                : """
                SELECT version, batch, origin_client, origin_ref, time, origin_name, origin_user FROM log
                WHERE table_name = ?1 AND version > ?2 AND version >= ?3 AND version <= ?4
                ORDER BY version ASC LIMIT ?5
                """
            let entries = try connection.rows(
                sql,
                [.text(name), .integer(oldest), .integer(from), .integer(to), .integer(Int64(max(0, limit)))],
                while: { $0.dropLast().reduce(0) { $0 + $1.batch.utf8.count } < byteLimit }, { logEntry(name, $0) })
            return HistoryPage(info: info, oldest: oldest, entries: entries)
        }
    }

    /// The nearest snapshot of table `name` at or below `version` and the log from it up to `version`, so that
    /// replaying the log onto the snapshot gives the table as it was at `version`. Throws `.noSuchTable`.
    public func state(_ name: String, at version: Int64) throws -> HistoricalState {
        try read("reading table \(name) at version \(version) in \(path)") {
            let (info, oldest) = try historyBounds(name)
            guard (oldest...info.version).contains(version) else {
                return HistoricalState(info: info, oldest: oldest, snapshot: nil, log: [])
            }
            let snapshot = try connection.firstRow(
                """
                SELECT version, body FROM snapshots WHERE table_name = ?1 AND version <= ?2
                ORDER BY version DESC LIMIT 1
                """,
                [.text(name), .integer(version)]
            ) { Snapshot(version: $0.int64(at: 0), body: $0.text(at: 1)) }
            guard let snapshot else { throw StoreError(.corrupt, "table \(name) has no snapshot in \(path)") }
            let log = try connection.rows(
                """
                SELECT version, batch, origin_client, origin_ref, time, origin_name, origin_user FROM log
                WHERE table_name = ?1 AND version > ?2 AND version <= ?3 ORDER BY version
                """,
                [.text(name), .integer(snapshot.version), .integer(version)],
                { logEntry(name, $0) })
            let contiguous = log.enumerated().allSatisfy { $1.version == snapshot.version + 1 + Int64($0) }
            guard contiguous, snapshot.version + Int64(log.count) == version else {
                throw StoreError(
                    .corrupt,
                    "table \(name)'s snapshot (version \(snapshot.version)) and log (\(log.count) entries) "
                        + "do not lead to version \(version) in \(path)")
            }
            return HistoricalState(info: info, oldest: oldest, snapshot: snapshot, log: log)
        }
    }

    /// The table's metadata and its oldest kept version, its oldest snapshot's.
    private func historyBounds(_ name: String) throws -> (TableInfo, oldest: Int64) {
        guard let info = try info(of: name) else { throw StoreError(.noSuchTable, "no table \(name) in \(path)") }
        let oldest = try connection.firstRow("SELECT min(version) FROM snapshots WHERE table_name = ?1", [.text(name)])
        {
            $0.isNull(at: 0) ? nil : $0.int64(at: 0)
        }
        guard let oldest = oldest ?? nil else { throw StoreError(.corrupt, "table \(name) has no snapshot in \(path)") }
        return (info, oldest)
    }

    private func logEntry(_ name: String, _ row: SQLiteStatement) -> LogEntry {
        LogEntry(
            table: name, version: row.int64(at: 0), batch: row.text(at: 1), originClient: row.text(at: 2),
            originRef: row.optionalText(at: 3), time: row.int64(at: 4), originName: row.text(at: 5),
            originUser: row.text(at: 6))
    }

    /// Prunes table `name` down to what `history` and `options.retention` keep: the log after the newest snapshot
    /// at or below the oldest version either keeps, and the snapshots from that one on. Returns the number of log
    /// entries removed.
    func prune(_ name: String, keeping history: HistoryRetention, latestSnapshot: Int64) throws -> Int64 {
        guard history != .all, let info = try info(of: name) else { return 0 }
        // The highest version whose log entry retention lets go: one for each bound, the lower one wins.
        var cut = Int64.max
        if let versions = history.versions { cut = min(cut, info.version - versions) }
        if let age = history.age {
            let before =
                try connection.firstRow(
                    """
                    SELECT max(version) FROM log WHERE table_name = ?1
                    AND time < CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) - ?2
                    """,
                    [.text(name), .integer(age)]
                ) { $0.isNull(at: 0) ? Int64(0) : $0.int64(at: 0) } ?? 0
            cut = min(cut, before)
        }
        switch options.retention {
        case .keepAll: return 0
        case .versionsBeforeSnapshot(let kept): cut = min(cut, latestSnapshot - kept)
        }
        let base = try connection.firstRow(
            "SELECT max(version) FROM snapshots WHERE table_name = ?1 AND version <= ?2", [.text(name), .integer(cut)]
        ) { $0.isNull(at: 0) ? nil : $0.int64(at: 0) }
        guard let base = base ?? nil else { return 0 }
        try connection.run(
            "DELETE FROM snapshots WHERE table_name = ?1 AND version < ?2", [.text(name), .integer(base)])
        try connection.run("DELETE FROM log WHERE table_name = ?1 AND version <= ?2", [.text(name), .integer(base)])
        return connection.changes
    }
}
