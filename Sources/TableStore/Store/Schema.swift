/// The store's on-disk layout and the marks that say a file is ours.
enum Schema {
    /// `PRAGMA application_id`: "TBLC" in ASCII, so `file` and SQLite tools can tell a Tablecast database apart.
    static let applicationID: Int32 = 0x5442_4C43
    /// `PRAGMA user_version`: bumped with every change to `script`, with a migration.
    static let version: Int32 = 5
    /// The tables every schema version has; an existing file must have all of them.
    static let tableNames: Set<String> = ["tables", "log", "snapshots", "refs"]

    /// Creates every table. Texts are opaque JSON encoded by the server; times are milliseconds since the Unix
    /// epoch. WITHOUT ROWID keeps each row in its primary-key b-tree, so lookups by key touch one tree.
    static let script = """
        CREATE TABLE tables (
            name TEXT PRIMARY KEY NOT NULL,
            epoch INTEGER NOT NULL,
            rules TEXT NOT NULL,
            created INTEGER NOT NULL,
            version INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE log (
            table_name TEXT NOT NULL,
            version INTEGER NOT NULL,
            batch TEXT NOT NULL,
            origin_client TEXT NOT NULL,
            origin_ref TEXT,
            time INTEGER NOT NULL,
            origin_name TEXT NOT NULL DEFAULT '',
            origin_user TEXT NOT NULL DEFAULT '',
            PRIMARY KEY (table_name, version)
        ) WITHOUT ROWID;
        CREATE TABLE snapshots (
            table_name TEXT NOT NULL,
            version INTEGER NOT NULL,
            body TEXT NOT NULL,
            PRIMARY KEY (table_name, version)
        ) WITHOUT ROWID;
        \(refsTable("refs"))
        CREATE UNIQUE INDEX refs_by_seq ON refs (principal, client, seq);
        \(metaTable)
        PRAGMA application_id = \(applicationID);
        PRAGMA user_version = \(version);
        """

    /// Refs are kept per principal (whose token) and client, with the table, the life of it (its epoch; 0 for
    /// refs stored before schema version 4) and the fingerprint of the intent each was used for. The ack comes
    /// last, so listing a client's refs never reads a long ack's overflow pages.
    private static func refsTable(_ name: String) -> String {
        """
        CREATE TABLE \(name) (
            principal TEXT NOT NULL,
            client TEXT NOT NULL,
            ref TEXT NOT NULL,
            table_name TEXT NOT NULL,
            version INTEGER NOT NULL,
            seq INTEGER NOT NULL,
            intent TEXT NOT NULL,
            epoch INTEGER NOT NULL DEFAULT 0,
            ack TEXT NOT NULL,
            PRIMARY KEY (principal, client, ref)
        ) WITHOUT ROWID;
        """
    }

    /// Facts about the database itself, by key: `identity`, the file it was last opened as (see
    /// ``SQLiteTableStore/identity(of:)``).
    private static let metaTable =
        "CREATE TABLE meta (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL) WITHOUT ROWID;"

    /// The script that brings a file of each older version to the next one.
    static let migrations: [Int64: String] = [
        // Version 2 scopes refs by principal and records each ref's intent. Existing refs were stored without a
        // principal, which is the tokenless one; their intents are unknown (empty), so a reuse of one is told
        // from a retry by its table only.
        1: """
        \(refsTable("refs_v2"))
        INSERT INTO refs_v2 (principal, client, ref, table_name, version, ack, seq, intent)
            SELECT '', client, ref, table_name, version, ack, seq, '' FROM refs;
        DROP TABLE refs;
        ALTER TABLE refs_v2 RENAME TO refs;
        CREATE UNIQUE INDEX refs_by_seq ON refs (principal, client, seq);
        PRAGMA user_version = 2;
        """,
        // Version 3 records who made each change by name too, for history. Older entries have no name (empty);
        // adding a column with a constant default rewrites nothing.
        2: """
        ALTER TABLE log ADD COLUMN origin_name TEXT NOT NULL DEFAULT '';
        PRAGMA user_version = 3;
        """,
        // Version 4 records the life of the table each ref was used on (its epoch; 0, unknown, for older refs), so
        // a retry after the table was dropped and created again is told from a retry, and the file's identity, so
        // a copy of the file is told from the file. The refs are rebuilt to keep their acks last.
        3: """
        \(refsTable("refs_v4"))
        INSERT INTO refs_v4 (principal, client, ref, table_name, version, seq, intent, ack)
            SELECT principal, client, ref, table_name, version, seq, intent, ack FROM refs;
        DROP TABLE refs;
        ALTER TABLE refs_v4 RENAME TO refs;
        CREATE UNIQUE INDEX refs_by_seq ON refs (principal, client, seq);
        \(metaTable)
        PRAGMA user_version = 4;
        """,
        // Version 5 records the verified user (a signed token's `sub`) behind each change; older entries have none.
        4: """
        ALTER TABLE log ADD COLUMN origin_user TEXT NOT NULL DEFAULT '';
        PRAGMA user_version = 5;
        """,
    ]
}
