/// Tables, reads and history of the PostgreSQL store.
extension PostgresTableStore {
    // MARK: Tables

    public func createTable(_ name: String, epoch: Int64, rules: String, snapshot: String, created: Int64) throws {
        try transaction("creating table \(name) in \(location)") { connection in
            let inserted = try connection.execute(
                """
                INSERT INTO tablecast.tables (name, epoch, rules, created, version) VALUES ($1, $2, $3, $4, 0)
                ON CONFLICT (name) DO NOTHING
                """, [name, String(epoch), rules, String(created)])
            guard inserted.changes == 1 else {
                throw StoreError(.tableExists, "table \(name) already exists in \(location)")
            }
            // A table of the same name dropped meanwhile may have left nothing; clear leftovers of an older life.
            try connection.execute("DELETE FROM tablecast.log WHERE table_name = $1", [name])
            try connection.execute("DELETE FROM tablecast.snapshots WHERE table_name = $1", [name])
            try connection.execute(
                "INSERT INTO tablecast.snapshots (table_name, version, body) VALUES ($1, 0, $2)", [name, snapshot])
            try notify(.created(table: name), connection)
        }
    }

    public func dropTable(_ name: String) throws {
        try transaction("dropping table \(name) in \(location)") { connection in
            guard try connection.execute("DELETE FROM tablecast.tables WHERE name = $1", [name]).changes > 0 else {
                throw StoreError(.noSuchTable, "no table \(name) in \(location)")
            }
            try connection.execute("DELETE FROM tablecast.log WHERE table_name = $1", [name])
            try connection.execute("DELETE FROM tablecast.snapshots WHERE table_name = $1", [name])
            try notify(.dropped(table: name), connection)
        }
    }

    public func updateRules(of name: String, _ change: (String) throws -> String) throws -> String {
        try transaction("setting the rules of table \(name) in \(location)") { connection in
            // FOR UPDATE: another node's change of these rules waits for this one, and then reads its result.
            let found = try connection.execute("SELECT rules FROM tablecast.tables WHERE name = $1 FOR UPDATE", [name])
            guard found.count == 1 else { throw StoreError(.noSuchTable, "no table \(name) in \(location)") }
            let rules = try change(found.text(0, 0))
            try connection.execute("UPDATE tablecast.tables SET rules = $2 WHERE name = $1", [name, rules])
            try notify(.rulesChanged(table: name), connection)
            return rules
        }
    }

    public func listTables() throws -> [TableInfo] {
        try perform("listing the tables of \(location)") { connection in
            let found = try connection.execute(
                "SELECT name, epoch, rules, created, version FROM tablecast.tables ORDER BY name")
            return found.map(Self.tableInfo(found))
        }
    }

    public func table(_ name: String) throws -> TableInfo? {
        try perform("reading table \(name) in \(location)") { connection in
            try Self.info(of: name, connection)
        }
    }

    static func info(of name: String, _ connection: PostgresConnection) throws(PostgresError) -> TableInfo? {
        let found = try connection.execute(
            "SELECT name, epoch, rules, created, version FROM tablecast.tables WHERE name = $1", [name])
        return found.count == 1 ? tableInfo(found)(0) : nil
    }

    private static func tableInfo(_ result: PostgresResult) -> (Int) -> TableInfo {
        { row in
            TableInfo(
                name: result.text(row, 0), epoch: result.int64(row, 1), rules: result.text(row, 2),
                created: result.int64(row, 3), version: result.int64(row, 4))
        }
    }

    // MARK: Reads

    public func load(_ name: String, logLimit: Int) throws -> LoadedTable {
        // One snapshot of the database for the three reads, so a commit between them cannot tear the result.
        try transaction(
            "loading table \(name) from \(location)", begin: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
        ) {
            connection in
            guard let info = try Self.info(of: name, connection) else {
                throw StoreError(.noSuchTable, "no table \(name) in \(location)")
            }
            let found = try connection.execute(
                "SELECT version, body FROM tablecast.snapshots WHERE table_name = $1 ORDER BY version DESC LIMIT 1",
                [name])
            guard found.count == 1 else { throw StoreError(.corrupt, "table \(name) has no snapshot in \(location)") }
            let snapshot = Snapshot(version: found.int64(0, 0), body: found.text(0, 1))
            let log = try entries(name, after: snapshot.version, limit: logLimit, connection)
            let contiguous = log.enumerated().allSatisfy { $1.version == snapshot.version + 1 + Int64($0) }
            guard contiguous, Int64(log.count) == min(info.version - snapshot.version, Int64(clamping: logLimit)) else {
                throw StoreError(
                    .corrupt,
                    "table \(name) is at version \(info.version) but its snapshot (version "
                        + "\(snapshot.version)) and log (\(log.count) entries) do not lead there in \(location)")
            }
            return LoadedTable(info: info, snapshot: snapshot, log: log)
        }
    }

    public func logEntries(_ name: String, after version: Int64, limit: Int) throws -> [LogEntry] {
        try perform("reading the log of table \(name) in \(location)") { connection in
            try entries(name, after: version, limit: limit, connection)
        }
    }

    private func entries(_ name: String, after version: Int64, limit: Int, _ connection: PostgresConnection)
        throws(PostgresError) -> [LogEntry]
    {
        let found = try connection.execute(
            """
            SELECT version, batch, origin_client, origin_ref, time, origin_name, origin_user FROM tablecast.log
            WHERE table_name = $1 AND version > $2 ORDER BY version LIMIT $3
            """, [name, String(version), String(limit)])
        return Self.logEntries(name, found)
    }

    /// The log entries of `found` (columns version, batch, origin_client, origin_ref, time, origin_name,
    /// origin_user).
    private static func logEntries(_ name: String, _ found: PostgresResult) -> [LogEntry] {
        found.map { row in
            LogEntry(
                table: name, version: found.int64(row, 0), batch: found.text(row, 1), originClient: found.text(row, 2),
                originRef: found.optionalText(row, 3), time: found.int64(row, 4), originName: found.text(row, 5),
                originUser: found.text(row, 6))
        }
    }

    // MARK: History

    public func history(
        _ name: String, from: Int64, to: Int64, limit: Int, byteLimit: Int, newestFirst: Bool
    ) throws -> HistoryPage {
        try transaction("reading the history of table \(name) in \(location)", begin: Self.readOnly) { connection in
            let (info, oldest) = try historyBounds(name, connection)
            let order = newestFirst ? "DESC" : "ASC"
            // The size of the batches up to the row before the one before each row: the page ends one row after
            // those that reach byteLimit, and it ends in the server, not in this process.
            let found = try connection.execute(
                """
                SELECT version, batch, origin_client, origin_ref, time, origin_name, origin_user FROM (
                    SELECT version, batch, origin_client, origin_ref, time, origin_name, origin_user,
                        coalesce(sum(octet_length(batch)) OVER (
                            ORDER BY version \(order) ROWS BETWEEN UNBOUNDED PRECEDING AND 2 PRECEDING), 0) AS before
                    FROM tablecast.log
                    WHERE table_name = $1 AND version > $2 AND version >= $3 AND version <= $4
                    ORDER BY version \(order) LIMIT $5) AS page
                WHERE before < $6 ORDER BY version \(order)
                """, [name, String(oldest), String(from), String(to), String(max(0, limit)), String(byteLimit)])
            return HistoryPage(info: info, oldest: oldest, entries: Self.logEntries(name, found))
        }
    }

    public func state(_ name: String, at version: Int64) throws -> HistoricalState {
        try transaction("reading table \(name) at version \(version) in \(location)", begin: Self.readOnly) {
            connection in
            let (info, oldest) = try historyBounds(name, connection)
            guard (oldest...info.version).contains(version) else {
                return HistoricalState(info: info, oldest: oldest, snapshot: nil, log: [])
            }
            let found = try connection.execute(
                """
                SELECT version, body FROM tablecast.snapshots WHERE table_name = $1 AND version <= $2
                ORDER BY version DESC LIMIT 1
                """, [name, String(version)])
            guard found.count == 1 else { throw StoreError(.corrupt, "table \(name) has no snapshot in \(location)") }
            let snapshot = Snapshot(version: found.int64(0, 0), body: found.text(0, 1))
            let log = try entries(name, after: snapshot.version, limit: Int(version - snapshot.version), connection)
            let contiguous = log.enumerated().allSatisfy { $1.version == snapshot.version + 1 + Int64($0) }
            guard contiguous, snapshot.version + Int64(log.count) == version else {
                throw StoreError(
                    .corrupt,
                    "table \(name)'s snapshot (version \(snapshot.version)) and log (\(log.count) entries) "
                        + "do not lead to version \(version) in \(location)")
            }
            return HistoricalState(info: info, oldest: oldest, snapshot: snapshot, log: log)
        }
    }

    /// One snapshot of the database for the reads of one history request.
    private static let readOnly = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"

    /// The table's metadata and its oldest kept version, its oldest snapshot's.
    private func historyBounds(_ name: String, _ connection: PostgresConnection) throws -> (TableInfo, oldest: Int64) {
        guard let info = try Self.info(of: name, connection) else {
            throw StoreError(.noSuchTable, "no table \(name) in \(location)")
        }
        let found = try connection.execute("SELECT min(version) FROM tablecast.snapshots WHERE table_name = $1", [name])
        guard !found.isNull(0, 0) else { throw StoreError(.corrupt, "table \(name) has no snapshot in \(location)") }
        return (info, found.int64(0, 0))
    }

    public func ack(client: String, ref: String, principal: String = "") throws -> StoredAck? {
        try perform("looking up ref \(ref) of client \(client) in \(location)") { connection in
            let found = try connection.execute(
                """
                SELECT table_name, version, ack, intent, epoch FROM tablecast.refs
                WHERE principal = $1 AND client = $2 AND ref = $3
                """, [principal, client, ref])
            return found.count == 1
                ? StoredAck(
                    table: found.text(0, 0), epoch: found.int64(0, 4), version: found.int64(0, 1),
                    ack: found.text(0, 2),
                    intent: found.text(0, 3))
                : nil
        }
    }

    public func refs(of client: String, principal: String = "") throws -> [String: StoredRef] {
        try perform("listing the refs of client \(client) in \(location)") { connection in
            let found = try connection.execute(
                "SELECT ref, table_name, intent, epoch FROM tablecast.refs WHERE principal = $1 AND client = $2",
                [principal, client])
            return Dictionary(
                found.map {
                    (
                        found.text($0, 0),
                        StoredRef(table: found.text($0, 1), epoch: found.int64($0, 3), intent: found.text($0, 2))
                    )
                },
                uniquingKeysWith: { first, _ in first })
        }
    }
}
