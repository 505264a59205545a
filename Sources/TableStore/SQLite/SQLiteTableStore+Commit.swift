extension SQLiteTableStore {
    /// Writes a group of records, possibly for several tables, in one transaction: all of them or none.
    ///
    /// Records of the same table must follow each other in version order, each the table's current version + 1.
    /// On any failure (`.noSuchTable`, `.conflict`, `.full`, `.readOnly`, `.io`, …) the transaction is rolled back,
    /// the database is as before the call, and the store stays usable. When the call returns, the group is durable
    /// as far as `options.synchronous` promises.
    public func commit(_ records: [CommitRecord]) throws {
        guard !records.isEmpty else { return }
        if refSequences.count > Self.refSequenceCacheLimit { refSequences.removeAll() }
        do {
            try transaction("commit of \(records.count) record(s) to \(path)") {
                var start = records.startIndex
                while start < records.endIndex {
                    let end = Self.endOfRun(records, from: start)
                    try advance(records[start..<end])
                    for record in records[start..<end] { try write(record) }
                    start = end
                }
            }
        } catch {
            // The cache ran ahead of what was rolled back; failures are rare, so re-reading beats tracking.
            refSequences.removeAll()
            throw error
        }
        checkpointIfNeeded()
    }

    /// Prunes table `name`'s log and older snapshots back to `options.retention` behind its latest snapshot.
    /// Returns the number of log entries removed.
    @discardableResult
    public func compact(_ name: String) throws -> Int64 {
        try transaction("compacting table \(name) in \(path)") {
            guard try info(of: name) != nil else { throw StoreError(.noSuchTable, "no table \(name) in \(path)") }
            return try prune(name)
        }
    }

    /// Compacts every table in one transaction. Returns the number of log entries removed.
    @discardableResult
    public func compactAll() throws -> Int64 {
        try transaction("compacting \(path)") {
            try connection.rows("SELECT name FROM tables", []) { $0.text(at: 0) }.reduce(0) { try $0 + prune($1) }
        }
    }

    /// The end of the run of records that starts at `start`: records of one table with consecutive versions,
    /// whose table row is advanced by one statement.
    private static func endOfRun(_ records: [CommitRecord], from start: Int) -> Int {
        var end = start + 1
        while end < records.endIndex, records[end].table == records[start].table,
            records[end].version == records[end - 1].version + 1
        {
            end += 1
        }
        return end
    }

    /// Moves a table from the version before `run`'s first record to its last, with the run's latest rules.
    private func advance(_ run: ArraySlice<CommitRecord>) throws {
        let first = run.first!
        let last = run.last!
        // The version guard makes gaps and duplicates impossible: the log replays onto the snapshot without holes.
        try connection.run(
            "UPDATE tables SET version = ?3, rules = coalesce(?4, rules) WHERE name = ?1 AND version = ?2 - 1",
            [
                .text(first.table), .integer(first.version), .integer(last.version),
                SQLiteValue(run.last(where: { $0.rules != nil })?.rules),
            ])
        if connection.changes == 0 {
            guard let current = try info(of: first.table)?.version else {
                throw StoreError(.noSuchTable, "no table \(first.table) for version \(first.version) in \(path)")
            }
            throw StoreError(
                .conflict,
                "table \(first.table) is at version \(current); a record for version \(first.version) "
                    + "cannot follow it")
        }
    }

    private func write(_ record: CommitRecord) throws {
        try connection.run(
            """
            INSERT INTO log (table_name, version, batch, origin_client, origin_ref, time, origin_name, origin_user)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
            """,
            [
                .text(record.table), .integer(record.version), .text(record.batch), .text(record.originClient),
                SQLiteValue(record.originRef), .integer(record.time), .text(record.originName),
                .text(record.originUser),
            ])
        if let ref = record.originRef {
            try storeRef(ref, of: record)
        }
        if let snapshot = record.snapshot {
            try connection.run(
                "INSERT INTO snapshots (table_name, version, body) VALUES (?1, ?2, ?3)",
                [.text(record.table), .integer(record.version), .text(snapshot)])
            if options.autoCompact { try prune(record.table) }
        }
    }

    /// Stores (principal, client, ref) → ack with the client's next sequence number, and now and then drops the
    /// client's refs that fell out of the last `refsPerClient`: with contiguous sequence numbers that is one range
    /// delete.
    private func storeRef(_ ref: String, of record: CommitRecord) throws {
        let (principal, client) = (record.principal, record.originClient)
        let key = RefClient(principal: principal, client: client)
        let seq: Int64
        // A known client's number is advanced where it is found: looking it up, then storing it, hashed the key
        // twice per ref.
        if let index = refSequences.index(forKey: key) {
            refSequences.values[index] += 1
            seq = refSequences.values[index]
        } else {
            let last = try connection.firstRow(
                "SELECT max(seq) FROM refs WHERE principal = ?1 AND client = ?2", [.text(principal), .text(client)]
            ) { $0.int64(at: 0) }
            seq = (last ?? 0) + 1
            refSequences[key] = seq
        }
        do {
            try connection.run(
                """
                INSERT INTO refs (principal, client, ref, table_name, version, ack, seq, intent, epoch)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
                """,
                [
                    .text(principal), .text(client), .text(ref), .text(record.table), .integer(record.version),
                    .text(record.ack), .integer(seq), .text(record.intent), .integer(record.epoch),
                ])
        } catch let error as SQLiteError where error.isConstraint {
            throw StoreError(
                .conflict,
                "client \(client) already has ref \(ref) stored; a retry must be answered from ack(client:ref:)",
                underlying: .sqlite(error))
        }
        // Pruning every 1/64th of the quota rather than on every ref keeps the commit path short; a client keeps
        // between refsPerClient and 1/64 more refs.
        if seq % max(1, options.refsPerClient / 64) == 0 {
            try connection.run(
                "DELETE FROM refs WHERE principal = ?1 AND client = ?2 AND seq <= ?3",
                [.text(principal), .text(client), .integer(seq - options.refsPerClient)])
        }
    }

    /// Drops snapshots older than the latest and log entries the retention policy no longer keeps (with
    /// `options.history`, what neither it nor `options.retention` keeps). Returns the number of log entries removed.
    @discardableResult
    private func prune(_ name: String) throws -> Int64 {
        let latest = try connection.firstRow(
            "SELECT max(version) FROM snapshots WHERE table_name = ?1", [.text(name)]
        ) { $0.isNull(at: 0) ? nil : $0.int64(at: 0) }
        guard let snapshotVersion = latest ?? nil else { return 0 }
        if let history = options.history { return try prune(name, keeping: history, latestSnapshot: snapshotVersion) }
        try connection.run(
            "DELETE FROM snapshots WHERE table_name = ?1 AND version < ?2", [.text(name), .integer(snapshotVersion)])
        guard case .versionsBeforeSnapshot(let kept) = options.retention else { return 0 }
        try connection.run(
            "DELETE FROM log WHERE table_name = ?1 AND version <= ?2", [.text(name), .integer(snapshotVersion - kept)])
        return connection.changes
    }
}
