/// The store's on-disk layout and the marks that say a file is ours.
enum Schema {
    /// `PRAGMA application_id`: "TBLC" in ASCII, so `file` and SQLite tools can tell a Tablecast database apart.
    static let applicationID: Int32 = 0x5442_4C43
    /// `PRAGMA user_version`: bumped with every change to `script`, with a migration.
    static let version: Int32 = 1
    /// The tables `script` creates; an existing file must have all of them.
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
            PRIMARY KEY (table_name, version)
        ) WITHOUT ROWID;
        CREATE TABLE snapshots (
            table_name TEXT NOT NULL,
            version INTEGER NOT NULL,
            body TEXT NOT NULL,
            PRIMARY KEY (table_name, version)
        ) WITHOUT ROWID;
        CREATE TABLE refs (
            client TEXT NOT NULL,
            ref TEXT NOT NULL,
            table_name TEXT NOT NULL,
            version INTEGER NOT NULL,
            ack TEXT NOT NULL,
            seq INTEGER NOT NULL,
            PRIMARY KEY (client, ref)
        ) WITHOUT ROWID;
        CREATE UNIQUE INDEX refs_by_seq ON refs (client, seq);
        PRAGMA application_id = \(applicationID);
        PRAGMA user_version = \(version);
        """
}
