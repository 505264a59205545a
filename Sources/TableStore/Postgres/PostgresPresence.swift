/// Who is on which table on each node, shared through PostgreSQL so that every node can show everyone.
///
/// Each node keeps one row per table with its local presence (opaque JSON made by the server) and a heartbeat
/// row; a node whose heartbeat is older than the timeout is taken for dead and its rows are removed by whichever
/// node notices first. Every change NOTIFYs ``StoreNotification/presenceChanged(table:)``. The tables are
/// UNLOGGED: presence is not worth an fsync, and a restarted PostgreSQL starts them empty, as it should.
///
/// It has a connection of its own (presence never waits behind a commit); one thread at a time uses it.
public final class PostgresPresence {
    private let url: String
    private var connection: PostgresConnection?

    public init(url: String) {
        self.url = url
    }

    /// Stores `node`'s presence on `table` (`clients`, a JSON array; nil: nobody) and announces the change.
    public func publish(node: String, table: String, clients: String?) throws {
        try perform("publishing presence on table \(table)") { connection in
            if let clients {
                try connection.execute(
                    """
                    INSERT INTO tablecast.presence (node, table_name, clients) VALUES ($1, $2, $3)
                    ON CONFLICT (node, table_name) DO UPDATE SET clients = excluded.clients
                    """, [node, table, clients])
            } else {
                try connection.execute(
                    "DELETE FROM tablecast.presence WHERE node = $1 AND table_name = $2", [node, table])
            }
            try connection.execute(
                "SELECT pg_notify($1, $2)",
                [StoreNotification.channel, StoreNotification.presenceChanged(table: table).payload])
        }
    }

    /// Records that `node` is alive, and removes the presence of nodes not heard from within `timeout`,
    /// announcing each table that loses someone.
    public func heartbeat(node: String, timeout: Duration) throws {
        let milliseconds = timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000
        try perform("sending the presence heartbeat") { connection in
            try connection.execute(
                """
                WITH now AS (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS ms),
                beat AS (
                    INSERT INTO tablecast.nodes (node, seen) SELECT $1, ms FROM now
                    ON CONFLICT (node) DO UPDATE SET seen = excluded.seen),
                dead AS (DELETE FROM tablecast.nodes WHERE node <> $1 AND seen < (SELECT ms FROM now) - $2 RETURNING node),
                gone AS (DELETE FROM tablecast.presence WHERE node IN (SELECT node FROM dead) RETURNING table_name)
                SELECT pg_notify($3, 'p:0:' || table_name) FROM (SELECT DISTINCT table_name FROM gone) AS t
                """, [node, String(milliseconds), StoreNotification.channel])
        }
    }

    /// The presence JSON of every other live node on `table`, in node order.
    public func others(on table: String, excluding node: String) throws -> [String] {
        try perform("reading presence on table \(table)") { connection in
            let found = try connection.execute(
                """
                SELECT p.clients FROM tablecast.presence p JOIN tablecast.nodes n ON n.node = p.node
                WHERE p.table_name = $1 AND p.node <> $2 ORDER BY p.node
                """, [table, node])
            return found.map { found.text($0, 0) }
        }
    }

    /// The presence JSON of every other live node, with the table it is on.
    public func othersOnEveryTable(excluding node: String) throws -> [(table: String, clients: String)] {
        try perform("reading presence on every table") { connection in
            let found = try connection.execute(
                """
                SELECT p.table_name, p.clients FROM tablecast.presence p JOIN tablecast.nodes n ON n.node = p.node
                WHERE p.node <> $1
                """, [node])
            return found.map { (found.text($0, 0), found.text($0, 1)) }
        }
    }

    /// Removes `node` and all its presence (a node shutting down), announcing the tables it was on.
    public func leave(node: String) throws {
        try perform("removing this node's presence") { connection in
            try connection.execute(
                """
                WITH gone AS (DELETE FROM tablecast.presence WHERE node = $1 RETURNING table_name),
                node AS (DELETE FROM tablecast.nodes WHERE node = $1)
                SELECT pg_notify($2, 'p:0:' || table_name) FROM (SELECT DISTINCT table_name FROM gone) AS t
                """, [node, StoreNotification.channel])
        }
    }

    /// Runs `body` on a connection, (re)connecting first when there is none; a failed call drops the connection
    /// so the next one starts afresh. The tables are created with the store's schema (``PostgresTableStore``).
    @discardableResult
    private func perform<T>(_ context: String, _ body: (PostgresConnection) throws -> T) throws -> T {
        do {
            let live: PostgresConnection
            if let connection, connection.isConnected {
                live = connection
            } else {
                live = try PostgresConnection(url: url)
                connection = live
            }
            return try body(live)
        } catch let error as PostgresError {
            connection = nil
            throw StoreError(error, while: "\(context) in \(PostgresTableStore.redacted(url))")
        }
    }
}
