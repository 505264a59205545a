/// The store's layout in PostgreSQL: every table inside the schema `tablecast`, so it can share a database with
/// others, and a schema version in `tablecast.meta`.
enum PostgresSchema {
    static let version = 1
    /// Serializes the first start of several nodes (`pg_advisory_xact_lock`): "TBLC" in ASCII.
    static let creationLock: Int64 = 0x5442_4C43

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
            PRIMARY KEY (table_name, version)
        );
        CREATE TABLE tablecast.snapshots (
            table_name TEXT NOT NULL,
            version BIGINT NOT NULL,
            body TEXT NOT NULL,
            PRIMARY KEY (table_name, version)
        );
        CREATE TABLE tablecast.refs (
            client TEXT NOT NULL,
            ref TEXT NOT NULL,
            table_name TEXT NOT NULL,
            version BIGINT NOT NULL,
            ack TEXT NOT NULL,
            seq BIGSERIAL NOT NULL,
            PRIMARY KEY (client, ref)
        );
        CREATE INDEX refs_by_seq ON tablecast.refs (client, seq);
        CREATE UNLOGGED TABLE tablecast.nodes (node TEXT PRIMARY KEY, seen BIGINT NOT NULL);
        CREATE UNLOGGED TABLE tablecast.presence (
            node TEXT NOT NULL,
            table_name TEXT NOT NULL,
            clients TEXT NOT NULL,
            PRIMARY KEY (node, table_name)
        );
        INSERT INTO tablecast.meta (key, value) VALUES ('schema_version', '\(version)');
        """
}
