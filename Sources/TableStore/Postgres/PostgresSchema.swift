/// The store's layout in PostgreSQL: every table inside the schema `tablecast`, so it can share a database with
/// others, and a schema version in `tablecast.meta`.
///
/// Version 4 has what SQLite's schema version 5 has: refs kept per principal with the fingerprint of their intent
/// and the life (epoch) of their table, the origin's display name and verified user in the log, and the database's
/// identity (`identity` in `tablecast.meta`, see ``PostgresTableStore``).
enum PostgresSchema {
    static let version = 4
    /// Serializes the first start of several nodes (`pg_advisory_xact_lock`): "TBLC" in ASCII.
    static let creationLock: Int64 = 0x5442_4C43
    /// The first key of every table's lock (`pg_advisory_lock(tableLocks, key)`, see ``PostgresTableStore``):
    /// "TBLT" in ASCII; the second is ``tableLockKey(_:)``.
    static let tableLocks: Int32 = 0x5442_4C54

    /// The second key of table `name`'s lock: FNV-1a (32 bits) of its UTF-8 bytes. Two names with one key only
    /// share a lock.
    static func tableLockKey(_ name: String) -> Int32 {
        var hash: UInt32 = 0x811c_9dc5
        for byte in name.utf8 { hash = (hash ^ UInt32(byte)) &* 0x0100_0193 }
        return Int32(bitPattern: hash)
    }

    static let script = """
        CREATE SCHEMA tablecast;
        CREATE TABLE tablecast.meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE tablecast.tables (
            name TEXT PRIMARY KEY,
            epoch BIGINT NOT NULL,
            rules TEXT NOT NULL,
            created BIGINT NOT NULL,
            version BIGINT NOT NULL
        );
        CREATE TABLE tablecast.log (
            table_name TEXT NOT NULL,
            version BIGINT NOT NULL,
            batch TEXT NOT NULL,
            origin_client TEXT NOT NULL,
            origin_ref TEXT,
            time BIGINT NOT NULL,
            origin_name TEXT NOT NULL DEFAULT '',
            origin_user TEXT NOT NULL DEFAULT '',
            PRIMARY KEY (table_name, version)
        );
        CREATE TABLE tablecast.snapshots (
            table_name TEXT NOT NULL,
            version BIGINT NOT NULL,
            body TEXT NOT NULL,
            PRIMARY KEY (table_name, version)
        );
        CREATE TABLE tablecast.refs (
            principal TEXT NOT NULL,
            client TEXT NOT NULL,
            ref TEXT NOT NULL,
            table_name TEXT NOT NULL,
            version BIGINT NOT NULL,
            intent TEXT NOT NULL,
            ack TEXT NOT NULL,
            seq BIGSERIAL NOT NULL,
            epoch BIGINT NOT NULL DEFAULT 0,
            PRIMARY KEY (principal, client, ref)
        );
        CREATE INDEX refs_by_seq ON tablecast.refs (principal, client, seq);
        CREATE UNLOGGED TABLE tablecast.nodes (node TEXT PRIMARY KEY, seen BIGINT NOT NULL);
        CREATE UNLOGGED TABLE tablecast.presence (
            node TEXT NOT NULL,
            table_name TEXT NOT NULL,
            clients TEXT NOT NULL,
            PRIMARY KEY (node, table_name)
        );
        INSERT INTO tablecast.meta (key, value) VALUES ('schema_version', '\(version)');
        """

    /// The script that brings a database of each older version to the next one.
    static let migrations: [Int: String] = [
        // Refs stored before were the tokenless principal's, their intents unknown (empty), as in SQLite's v2.
        1: """
        ALTER TABLE tablecast.log ADD COLUMN origin_name TEXT NOT NULL DEFAULT '';
        ALTER TABLE tablecast.refs ADD COLUMN principal TEXT NOT NULL DEFAULT '';
        ALTER TABLE tablecast.refs ADD COLUMN intent TEXT NOT NULL DEFAULT '';
        ALTER TABLE tablecast.refs DROP CONSTRAINT refs_pkey;
        ALTER TABLE tablecast.refs ADD PRIMARY KEY (principal, client, ref);
        DROP INDEX tablecast.refs_by_seq;
        CREATE INDEX refs_by_seq ON tablecast.refs (principal, client, seq);
        UPDATE tablecast.meta SET value = '2' WHERE key = 'schema_version';
        """,
        // Older refs' table lives are unknown (0): they are told apart by table name only, as before.
        2: """
        ALTER TABLE tablecast.refs ADD COLUMN epoch BIGINT NOT NULL DEFAULT 0;
        UPDATE tablecast.meta SET value = '3' WHERE key = 'schema_version';
        """,
        // Older log entries have no verified user (empty), as in SQLite's v5.
        3: """
        ALTER TABLE tablecast.log ADD COLUMN origin_user TEXT NOT NULL DEFAULT '';
        UPDATE tablecast.meta SET value = '4' WHERE key = 'schema_version';
        """,
    ]
}
