extension SQLiteTableStore {
    /// What a table actor starts from: metadata, the latest snapshot and the log after it, in version order.
    /// Throws `.noSuchTable`, or `.corrupt` when the stored log does not lead from the snapshot to the version.
    public func load(_ name: String, logLimit: Int) throws -> LoadedTable {
        try read("loading table \(name) from \(path)") {
            guard let info = try info(of: name) else { throw StoreError(.noSuchTable, "no table \(name) in \(path)") }
            let snapshot = try connection.firstRow(
                "SELECT version, body FROM snapshots WHERE table_name = ?1 ORDER BY version DESC LIMIT 1", [.text(name)]
            ) { Snapshot(version: $0.int64(at: 0), body: $0.text(at: 1)) }
            guard let snapshot else { throw StoreError(.corrupt, "table \(name) has no snapshot in \(path)") }
            let log = try entries(name, after: snapshot.version, limit: logLimit)
            let contiguous = log.enumerated().allSatisfy { $1.version == snapshot.version + 1 + Int64($0) }
            guard contiguous, Int64(log.count) == min(info.version - snapshot.version, Int64(clamping: logLimit)) else {
                throw StoreError(
                    .corrupt,
                    "table \(name) is at version \(info.version) but its snapshot (version "
                        + "\(snapshot.version)) and log (\(log.count) entries) do not lead there in \(path)")
            }
            return LoadedTable(info: info, snapshot: snapshot, log: log)
        }
    }

    /// Up to `limit` log entries of table `name` with versions after `version`, in version order: a subscriber's
    /// catch-up. Check `oldestLogVersion` first: entries before it are gone.
    public func logEntries(_ name: String, after version: Int64, limit: Int = .max) throws -> [LogEntry] {
        try perform("reading the log of table \(name) in \(path)") { try entries(name, after: version, limit: limit) }
    }

    /// The lowest version still in table `name`'s log, or nil when its log is empty (or the table does not exist).
    ///
    /// A subscriber that saw version `since` can catch up from the log when `since >= oldest - 1` (or, with an
    /// empty log, when it is at the table's version); otherwise it needs a snapshot.
    public func oldestLogVersion(_ name: String) throws -> Int64? {
        try perform("reading the log of table \(name) in \(path)") {
            try connection.firstRow("SELECT min(version) FROM log WHERE table_name = ?1", [.text(name)]) {
                $0.isNull(at: 0) ? nil : $0.int64(at: 0)
            } ?? nil
        }
    }

    /// The ack stored for (principal, client, ref), or nil when this intent was never committed (or its ref was
    /// pruned).
    public func ack(client: String, ref: String, principal: String = "") throws -> StoredAck? {
        try perform("looking up ref \(ref) of client \(client) in \(path)") {
            try connection.firstRow(
                """
                SELECT table_name, version, ack, intent, epoch FROM refs WHERE principal = ?1 AND client = ?2 AND ref = ?3
                """,
                [.text(principal), .text(client), .text(ref)]
            ) {
                StoredAck(
                    table: $0.text(at: 0), epoch: $0.int64(at: 4), version: $0.int64(at: 1), ack: $0.text(at: 2),
                    intent: $0.text(at: 3))
            }
        }
    }

    private func entries(_ name: String, after version: Int64, limit: Int) throws -> [LogEntry] {
        try connection.rows(
            """
            SELECT version, batch, origin_client, origin_ref, time, origin_name, origin_user FROM log
            WHERE table_name = ?1 AND version > ?2 ORDER BY version LIMIT ?3
            """,
            [.text(name), .integer(version), .integer(Int64(limit))]
        ) {
            LogEntry(
                table: name, version: $0.int64(at: 0), batch: $0.text(at: 1), originClient: $0.text(at: 2),
                originRef: $0.optionalText(at: 3), time: $0.int64(at: 4), originName: $0.text(at: 5),
                originUser: $0.text(at: 6))
        }
    }
}
