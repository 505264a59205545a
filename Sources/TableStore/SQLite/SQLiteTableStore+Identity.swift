import Foundation

extension SQLiteTableStore {
    /// What tells the file at `path` from a copy of it: the device and inode it lives at. A copy (`cp`, a restored
    /// backup, a file restored from an archive) is another file; a rename or a restart is not. Not told apart: a
    /// whole file system rolled back in place (a volume or VM snapshot), which keeps the inode, and a copy written
    /// after the original was deleted that the file system gives the same inode (`tablecast backup` records its
    /// copy's own identity, so a restore from one of its copies is told apart all the same).
    static func identity(of path: String) throws -> String {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw StoreError(.io, "cannot stat \(path): \(String(cString: strerror(errno)))")
        }
        return "\(info.st_dev):\(info.st_ino)"
    }

    /// Gives every table a new epoch when the file is not the one the database was last opened as (it is a copy):
    /// a client that saw the original must never resume on the copy, whose tables may have moved on differently.
    /// A file without a recorded identity (new, or of an older schema) is taken for a copy: its clients take a
    /// snapshot once. Then records the file's identity.
    func renewEpochsIfCopied() throws {
        let identity = try Self.identity(of: path)
        let recorded = try connection.firstRow("SELECT value FROM meta WHERE key = 'identity'") { $0.text(at: 0) }
        guard recorded != identity else { return }
        try transaction("giving the tables of \(path) new epochs") {
            try Self.renewEpochs(connection, identity: identity)
        }
    }

    /// Gives every table in the database `connection` is open on a new epoch (refs follow their table's life) and
    /// records `identity` as the file's. Runs in the caller's transaction.
    static func renewEpochs(_ connection: SQLiteConnection, identity: String) throws {
        let tables = try connection.rows("SELECT name, epoch FROM tables") { ($0.text(at: 0), $0.int64(at: 1)) }
        try connection.execute(
            "CREATE TEMP TABLE renewed (name TEXT NOT NULL, old INTEGER NOT NULL, new INTEGER NOT NULL)")
        for (name, old) in tables {
            try connection.run(
                "INSERT INTO temp.renewed (name, old, new) VALUES (?1, ?2, ?3)",
                [.text(name), .integer(old), .integer(Int64.random(in: 1...Int64.max))])
        }
        try connection.execute(
            """
            UPDATE tables SET epoch = r.new FROM temp.renewed r WHERE tables.name = r.name;
            UPDATE refs SET epoch = r.new FROM temp.renewed r WHERE refs.table_name = r.name AND refs.epoch = r.old;
            DROP TABLE temp.renewed;
            """)
        try connection.run(
            "INSERT INTO meta (key, value) VALUES ('identity', ?1) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [.text(identity)])
    }
}
