/// The store in one PostgreSQL database that several server nodes share: the same tables, log, snapshots and
/// refs as the SQLite ``SQLiteTableStore``, written through libpq.
///
/// A commit advances each table's version only if it is still where the committing node left it (`UPDATE …
/// WHERE version = v`), so every table keeps one order of versions whichever node commits; a node that lost the
/// race gets `.conflict` and rebases. Every transaction NOTIFYs ``StoreNotification/channel`` with what it did.
/// Durability is PostgreSQL's own (`synchronous_commit`, on by default).
///
/// So that a node that lost cannot lose again while the winner keeps committing, a conflict *reserves* the table
/// for the loser: its connection takes the table's lock (a session-level advisory lock) before `.conflict` is
/// thrown, and every commit of a table needs that lock for its transaction (`pg_try_advisory_xact_lock`, which
/// the holder's own transactions get at once); another node's commit meanwhile is a conflict, whose node then
/// waits for the lock in turn. The reservation ends with the next commit of the table from this store, with
/// ``release(_:)``, when the connection is lost, or after ``reservationTimeout``. Deadlock-free: a connection waits
/// for a table's lock only while it holds no other (and outside any transaction), transactions never wait for
/// one (they try), and they update the tables' rows in name order.
///
/// When the server cannot be reached, calls fail with `.unreachable` at once; the store reconnects on a later
/// call, no sooner than its backoff allows (0.1 s, doubling to 2 s).
public final class PostgresTableStore: TableStorage {
    public let location: String
    public var isShared: Bool { true }
    public let options: TableStoreOptions
    private let connection: PostgresConnection
    private var isClosed = false
    /// Refs stored per client since the store opened, to prune a client's old refs every 1/64th of the quota.
    private var refCounts: [String: Int64] = [:]
    private var backoff = Duration.milliseconds(100)
    private var nextAttempt = ContinuousClock.now
    /// Tables this connection has reserved after a conflict (it holds their lock), with when it took each.
    private var reservations: [String: ContinuousClock.Instant] = [:]
    /// The longest a reservation lasts, and the longest a commit that lost waits for one held elsewhere: a node
    /// stuck in between must not stall the others' commits of the table for longer.
    public static let reservationTimeout = Duration.seconds(5)

    /// Connects to `url` and creates the schema on the first start. Throws `.unreachable` when the server cannot
    /// be reached and `.foreign` for a schema version this build does not know.
    public init(url: String, options: TableStoreOptions = .init()) throws {
        location = Self.redacted(url)
        self.options = options
        do {
            connection = try PostgresConnection(url: url)
        } catch {
            throw StoreError(error, while: "connecting to \(Self.redacted(url))")
        }
        try transaction("opening \(location)") { connection in
            try connection.execute("SELECT pg_advisory_xact_lock(\(PostgresSchema.creationLock))")
            let exists = try connection.execute("SELECT to_regclass('tablecast.meta') IS NOT NULL").text(0, 0) == "t"
            if exists {
                let found = try connection.execute("SELECT value FROM tablecast.meta WHERE key = 'schema_version'")
                var version = found.count == 1 ? found.text(0, 0) : "none"
                // Each older version is brought to the next in this same transaction.
                while let number = Int(version), let migration = PostgresSchema.migrations[number] {
                    try connection.execute(migration)
                    version = String(number + 1)
                }
                guard version == String(PostgresSchema.version) else {
                    throw StoreError(
                        .foreign,
                        "\(location) has Tablecast schema version \(version); this build knows version "
                            + "\(PostgresSchema.version)")
                }
            } else {
                try connection.execute(PostgresSchema.script)
            }
            try Self.renewEpochsIfCopied(connection)
        }
    }

    /// What tells this database from a copy of it: the cluster's system identifier (when this role may read it),
    /// the database's oid and the cluster's timeline. A dump restored elsewhere, a database created from another
    /// as template, a cluster restored from a base backup to a point in time or a promoted standby differ; a
    /// restart or another node does not.
    private static let identityQuery = """
        SELECT CASE WHEN has_function_privilege('pg_control_system()', 'EXECUTE')
                THEN (SELECT system_identifier::text FROM pg_control_system()) ELSE '' END
            || ':' || (SELECT oid::text FROM pg_database WHERE datname = current_database())
            || ':' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8)
        """

    /// Gives every table a new epoch when the database is not the one the nodes last opened (it is a copy): a
    /// client that saw the original must never resume on the copy. A database without a recorded identity (new, or
    /// of an older schema) is taken for a copy: its clients take a snapshot once. Then records the identity. Runs
    /// in the opening transaction, under the creation lock, so that nodes starting together renew once. A standby
    /// (in recovery: read only, e.g. for `tablecast backup`) is left as it is.
    private static func renewEpochsIfCopied(_ connection: PostgresConnection) throws(PostgresError) {
        guard try connection.execute("SELECT pg_is_in_recovery()").text(0, 0) == "f" else { return }
        let identity = try connection.execute(identityQuery).text(0, 0)
        let recorded = try connection.execute("SELECT value FROM tablecast.meta WHERE key = 'identity'")
        guard recorded.count == 0 || recorded.text(0, 0) != identity else { return }
        let tables = try connection.execute("SELECT name, epoch FROM tablecast.tables FOR UPDATE")
        try connection.execute(
            """
            WITH renewed AS (SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[]) AS u(name, old, new)),
            tables AS (UPDATE tablecast.tables t SET epoch = r.new FROM renewed r WHERE t.name = r.name)
            UPDATE tablecast.refs f SET epoch = r.new FROM renewed r WHERE f.table_name = r.name AND f.epoch = r.old
            """,
            [
                array(tables.map { tables.text($0, 0) }), array(tables.map { tables.text($0, 1) }),
                array(tables.map { _ in String(Int64.random(in: 1...Int64.max)) }),
            ])
        try connection.execute(
            """
            INSERT INTO tablecast.meta (key, value) VALUES ('identity', $1)
            ON CONFLICT (key) DO UPDATE SET value = excluded.value
            """, [identity])
    }

    deinit {
        try? close()
    }

    public func close() throws {
        isClosed = true
    }

    /// PostgreSQL checkpoints on its own.
    public var checkpointFailure: StoreError? { nil }

    /// `url` without its password, for messages.
    static func redacted(_ url: String) -> String {
        guard let at = url.firstIndex(of: "@") else { return url }
        let credentials = url[..<at].split(separator: "/", omittingEmptySubsequences: false).last ?? ""
        guard let colon = credentials.firstIndex(of: ":") else { return url }
        return String(url[..<colon]) + ":***" + url[at...]
    }

    // MARK: Commits

    public func commit(_ records: [CommitRecord]) throws {
        guard !records.isEmpty else { return }
        releaseExpiredReservations()
        // Runs of one table's consecutive versions, in table name order: every node's transactions lock the
        // tables' rows in the same order.
        var runs: [ArraySlice<CommitRecord>] = []
        var start = records.startIndex
        while start < records.endIndex {
            var end = start + 1
            while end < records.endIndex, records[end].table == records[start].table,
                records[end].version == records[end - 1].version + 1
            {
                end += 1
            }
            runs.append(records[start..<end])
            start = end
        }
        runs.sort { $0.first!.table < $1.first!.table }
        var lost: String?
        let write = { (run: ArraySlice<CommitRecord>, connection: PostgresConnection) throws in
            do {
                try self.write(run, connection)
            } catch let error as StoreError where error.kind == .conflict {
                lost = run.first!.table
                throw error
            }
        }
        let context = "commit of \(records.count) record(s) to \(location)"
        do {
            // One statement is atomic on its own; a snapshot and its pruning go with it in a transaction.
            if runs.count == 1 && !records.contains(where: { $0.snapshot != nil }) {
                try perform(context) { try write(runs[0], $0) }
            } else {
                try transaction(context) { connection in
                    for run in runs { try write(run, connection) }
                }
            }
        } catch let error as StoreError where [.conflict, .duplicateRef].contains(error.kind) {
            // The group is rebased and committed again: reserve its table for that.
            if let lost { reserve(lost) }
            throw error
        } catch {
            for run in runs { release(run.first!.table) }
            throw error
        }
        for run in runs { release(run.first!.table) }
    }

    /// Takes table `name`'s lock for this connection after it lost a commit of it: waits (up to
    /// ``reservationTimeout``) for the node that holds it when this one holds no other, only tries otherwise.
    /// Without the lock, the rebased group competes as any other.
    private func reserve(_ name: String) {
        guard reservations[name] == nil, connection.isConnected else { return }
        let lock = "\(PostgresSchema.tableLocks), \(PostgresSchema.tableLockKey(name))"
        let milliseconds = Self.reservationTimeout.components.seconds * 1000
        do {
            if reservations.isEmpty {
                // One implicit transaction: the timeout applies to this wait only; the lock outlives it.
                try connection.execute("SET LOCAL lock_timeout = \(milliseconds); SELECT pg_advisory_lock(\(lock))")
            } else {
                guard try connection.execute("SELECT pg_try_advisory_lock(\(lock))").text(0, 0) == "t" else { return }
            }
            reservations[name] = .now
        } catch {
            // Timed out, or the connection was lost: the next commit reports it.
            endStuckReservation(of: name)
        }
    }

    /// Ends the session that holds table `name`'s lock if it has sat idle for twice ``reservationTimeout``: a
    /// live node ends its reservations by then (with a commit or when they expire), so that node is stuck (paused,
    /// or cut off without its socket closing) and would otherwise stall every node's commits of the table. Its
    /// node finds the connection gone and reconnects; nothing it had acknowledged is lost, since a session idle
    /// outside a transaction has nothing uncommitted.
    private func endStuckReservation(of name: String) {
        let seconds = 2 * Self.reservationTimeout.components.seconds
        _ = try? connection.execute(
            """
            SELECT pg_terminate_backend(a.pid) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
            WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
                AND l.classid = ($1::int)::oid AND l.objid = ($2::int)::oid
                AND a.state = 'idle' AND a.state_change < clock_timestamp() - make_interval(secs => $3)
            """, [String(PostgresSchema.tableLocks), String(PostgresSchema.tableLockKey(name)), String(seconds)])
    }

    /// Ends this connection's reservation of table `name`, if it holds one: the group it was taken for commits
    /// nothing after all.
    public func release(_ name: String) {
        guard reservations.removeValue(forKey: name) != nil, connection.isConnected else { return }
        _ = try? connection.execute(
            "SELECT pg_advisory_unlock(\(PostgresSchema.tableLocks), \(PostgresSchema.tableLockKey(name)))")
    }

    /// Ends the reservations held longer than ``reservationTimeout`` (their group never came), and forgets all of
    /// them when the connection was lost (which released the locks).
    public func releaseExpiredReservations() {
        guard !reservations.isEmpty else { return }
        guard connection.isConnected else { return reservations.removeAll() }
        let now = ContinuousClock.now
        for (name, since) in reservations where now - since > Self.reservationTimeout { release(name) }
    }

    /// Advances a table over one run of consecutive versions, and writes its log, refs and snapshots.
    ///
    /// Version check, log, refs and notification are one statement (one round trip): a group of one table without
    /// a snapshot, the usual one, is then committed without an explicit transaction.
    private func write(_ run: ArraySlice<CommitRecord>, _ connection: PostgresConnection) throws {
        let first = run.first!
        let last = run.last!
        let withRefs = run.filter { $0.originRef != nil }
        let outcome = Result { () throws(PostgresError) in
            try connection.execute(
                """
                WITH advanced AS (
                    UPDATE tablecast.tables SET version = $3, rules = coalesce($4, rules)
                    WHERE name = $1 AND version = $2 AND pg_try_advisory_xact_lock(\(PostgresSchema.tableLocks), $5::int)
                    RETURNING version),
                logged AS (
                    INSERT INTO tablecast.log
                        (table_name, version, batch, origin_client, origin_ref, time, origin_name, origin_user)
                    SELECT $1, * FROM unnest(
                        $6::bigint[], $7::text[], $8::text[], $9::text[], $10::bigint[], $11::text[], $21::text[])
                    WHERE EXISTS (SELECT FROM advanced)),
                referenced AS (
                    INSERT INTO tablecast.refs (principal, client, ref, table_name, version, intent, ack, epoch)
                    SELECT p, c, r, $1, v, i, a, $20::bigint
                    FROM unnest($12::text[], $13::text[], $14::text[], $15::bigint[], $16::text[], $17::text[])
                        AS u(p, c, r, v, i, a)
                    WHERE EXISTS (SELECT FROM advanced)),
                notified AS (SELECT pg_notify($18, $19) FROM advanced)
                SELECT (SELECT count(*) FROM notified), (SELECT version FROM tablecast.tables WHERE name = $1)
                """,
                [
                    first.table, String(first.version - 1), String(last.version),
                    run.last(where: { $0.rules != nil })?.rules, String(PostgresSchema.tableLockKey(first.table)),
                    Self.array(run.map { String($0.version) }), Self.array(run.map(\.batch)),
                    Self.array(run.map(\.originClient)), Self.array(run.map(\.originRef)),
                    Self.array(run.map { String($0.time) }), Self.array(run.map(\.originName)),
                    Self.array(withRefs.map(\.principal)), Self.array(withRefs.map(\.originClient)),
                    Self.array(withRefs.map(\.originRef)), Self.array(withRefs.map { String($0.version) }),
                    Self.array(withRefs.map(\.intent)), Self.array(withRefs.map(\.ack)),
                    StoreNotification.channel,
                    StoreNotification.committed(table: first.table, version: last.version).payload,
                    String(first.epoch), Self.array(run.map(\.originUser)),
                ])
        }
        let advanced: PostgresResult
        switch outcome {
        case .success(let result):
            advanced = result
        case .failure(let error) where error.isConstraint:
            // Only a ref can collide once the version check passed: a retry that another node committed.
            throw StoreError(
                .duplicateRef, "a ref of this group is already stored (a retry committed elsewhere): \(error)",
                underlying: .postgres(error))
        case .failure(let error):
            throw error
        }
        guard advanced.int64(0, 0) == 1 else {
            guard !advanced.isNull(0, 1) else {
                throw StoreError(.noSuchTable, "no table \(first.table) for version \(first.version) in \(location)")
            }
            throw StoreError(
                .conflict,
                "table \(first.table) is at version \(advanced.text(0, 1)) or reserved by another node; a "
                    + "record for version \(first.version) cannot follow it")
        }
        // Housekeeping: without a transaction the commit is already durable and must not be reported failed (in
        // one, a failure here fails its COMMIT instead).
        for record in withRefs { try? countRef(of: record.originClient, principal: record.principal, connection) }
        for record in run {
            guard let snapshot = record.snapshot else { continue }
            try connection.execute(
                "INSERT INTO tablecast.snapshots (table_name, version, body) VALUES ($1, $2, $3)",
                [record.table, String(record.version), snapshot])
            if options.autoCompact { try prune(record.table, connection) }
        }
    }

    /// Prunes `client`'s (of `principal`) refs beyond the last `refsPerClient` every 1/64th of that quota.
    private func countRef(of client: String, principal: String, _ connection: PostgresConnection) throws(PostgresError)
    {
        let key = "\(principal)\u{0}\(client)"
        let count = refCounts[key, default: 0] + 1
        refCounts[key] = count
        guard count % max(1, options.refsPerClient / 64) == 0 else { return }
        try connection.execute(
            """
            DELETE FROM tablecast.refs WHERE principal = $1 AND client = $2 AND seq <= (
                SELECT seq FROM tablecast.refs WHERE principal = $1 AND client = $2 ORDER BY seq DESC OFFSET $3 LIMIT 1)
            """, [principal, client, String(options.refsPerClient)])
    }

    /// Drops snapshots older than the latest and the log entries the retention policy no longer keeps (with
    /// `options.history`, what neither it nor `options.retention` keeps). Returns the number of log entries removed.
    @discardableResult
    private func prune(_ name: String, _ connection: PostgresConnection) throws(PostgresError) -> Int64 {
        let latest = try connection.execute(
            "SELECT max(version) FROM tablecast.snapshots WHERE table_name = $1", [name])
        guard !latest.isNull(0, 0) else { return 0 }
        let version = latest.int64(0, 0)
        if let history = options.history {
            return try prune(name, keeping: history, latestSnapshot: version, connection)
        }
        try connection.execute(
            "DELETE FROM tablecast.snapshots WHERE table_name = $1 AND version < $2", [name, String(version)])
        guard case .versionsBeforeSnapshot(let kept) = options.retention else { return 0 }
        return Int64(
            try connection.execute(
                "DELETE FROM tablecast.log WHERE table_name = $1 AND version <= $2", [name, String(version - kept)]
            ).changes)
    }

    /// Prunes table `name` down to what `history` and `options.retention` keep, as the SQLite store does: the log
    /// after the newest snapshot at or below the oldest version either keeps, and the snapshots from that one on.
    private func prune(
        _ name: String, keeping history: HistoryRetention, latestSnapshot: Int64, _ connection: PostgresConnection
    ) throws(PostgresError) -> Int64 {
        guard history != .all, let info = try Self.info(of: name, connection) else { return 0 }
        // The highest version whose log entry retention lets go: one for each bound, the lower one wins.
        var cut = Int64.max
        if let versions = history.versions { cut = min(cut, info.version - versions) }
        if let age = history.age {
            let before = try connection.execute(
                """
                SELECT coalesce(max(version), 0) FROM tablecast.log
                WHERE table_name = $1 AND time < (extract(epoch FROM clock_timestamp()) * 1000)::bigint - $2
                """, [name, String(age)])
            cut = min(cut, before.int64(0, 0))
        }
        switch options.retention {
        case .keepAll: return 0
        case .versionsBeforeSnapshot(let kept): cut = min(cut, latestSnapshot - kept)
        }
        let base = try connection.execute(
            "SELECT max(version) FROM tablecast.snapshots WHERE table_name = $1 AND version <= $2", [name, String(cut)])
        guard !base.isNull(0, 0) else { return 0 }
        let version = String(base.int64(0, 0))
        try connection.execute(
            "DELETE FROM tablecast.snapshots WHERE table_name = $1 AND version < $2", [name, version])
        return Int64(
            try connection.execute(
                "DELETE FROM tablecast.log WHERE table_name = $1 AND version <= $2", [name, version]
            )
            .changes)
    }

    /// Prunes every table to what `options` keep, as the nodes do whenever they store a snapshot (`tablecast
    /// compact`), one transaction per table, then VACUUMs the log, snapshots and refs so that their space is
    /// reused. Safe while nodes run: it only removes what retention no longer keeps, and VACUUM (not FULL) blocks
    /// no writer. Returns the number of log entries removed.
    public func compactAll() throws -> Int64 {
        var removed: Int64 = 0
        for info in try listTables() {
            removed += try transaction("compacting table \(info.name) in \(location)") { try prune(info.name, $0) }
        }
        _ = try perform("vacuuming \(location)") { connection in
            try connection.execute("VACUUM (ANALYZE) tablecast.log, tablecast.snapshots, tablecast.refs")
        }
        return removed
    }

    func notify(_ notification: StoreNotification, _ connection: PostgresConnection) throws(PostgresError) {
        try connection.execute("SELECT pg_notify($1, $2)", [StoreNotification.channel, notification.payload])
    }

    // MARK: Helpers

    /// A PostgreSQL array literal of `values` (nil → NULL), every element quoted. Built as UTF-8 bytes: it carries
    /// every batch and ack of a commit (no byte of a multi-byte character is a quote or a backslash).
    static func array(_ values: [String?]) -> String {
        let quote = UInt8(ascii: "\"")
        let backslash = UInt8(ascii: "\\")
        var bytes: [UInt8] = []
        bytes.reserveCapacity(values.reduce(2) { $0 + ($1?.utf8.count ?? 4) + 3 })
        bytes.append(UInt8(ascii: "{"))
        for (index, value) in values.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            guard let value else {
                bytes.append(contentsOf: "NULL".utf8)
                continue
            }
            bytes.append(quote)
            for byte in value.utf8 {
                if byte == quote || byte == backslash { bytes.append(backslash) }
                bytes.append(byte)
            }
            bytes.append(quote)
        }
        bytes.append(UInt8(ascii: "}"))
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Runs `body` in a transaction, commits it, and rolls back on any failure.
    func transaction<T>(
        _ context: @autoclosure () -> String, begin: String = "BEGIN", _ body: (PostgresConnection) throws -> T
    ) throws -> T {
        try perform(context()) { connection in
            try connection.execute(begin)
            do {
                let result = try body(connection)
                try connection.execute("COMMIT")
                return result
            } catch {
                if connection.isConnected { _ = try? connection.execute("ROLLBACK") }
                throw error
            }
        }
    }

    /// Runs `body` on a live connection, reconnecting first if the last call lost it (and the backoff allows),
    /// and turns a libpq failure into a classified `StoreError` that names `context`.
    func perform<T>(_ context: @autoclosure () -> String, _ body: (PostgresConnection) throws -> T) throws -> T {
        guard !isClosed else { throw StoreError(.internal, "\(context()): the store is closed") }
        if !connection.isConnected {
            let now = ContinuousClock.now
            guard now >= nextAttempt else {
                throw StoreError(.unreachable, "\(context()): PostgreSQL at \(location) is unreachable; reconnecting")
            }
            do {
                try connection.reset()
                backoff = .milliseconds(100)
            } catch {
                nextAttempt = now + backoff
                backoff = min(backoff * 2, .seconds(2))
                throw StoreError(error, while: context())
            }
        }
        do {
            return try body(connection)
        } catch let error as PostgresError {
            var failure = StoreError(error, while: context())
            // Lost once statements were sent: the server may have committed what it was sent.
            failure.outcomeUnknown = failure.kind == .unreachable
            throw failure
        }
    }
}

@available(
    *, unavailable, message: "PostgresTableStore has one owner at a time: keep it inside the committer that drives it"
)
extension PostgresTableStore: Sendable {}
