extension SQLiteTableStore {
    /// Creates table `name` at version 0 with its initial snapshot `snapshot`. Throws `.tableExists` when it exists.
    ///
    /// - Parameter created: creation time, milliseconds since the Unix epoch.
    public func createTable(_ name: String, epoch: Int64, rules: String, snapshot: String, created: Int64) throws {
        try transaction("creating table \(name) in \(path)") {
            guard try info(of: name) == nil else {
                throw StoreError(.tableExists, "table \(name) already exists in \(path)")
            }
            try connection.run(
                "INSERT INTO tables (name, epoch, rules, created, version) VALUES (?1, ?2, ?3, ?4, 0)",
                [.text(name), .integer(epoch), .text(rules), .integer(created)])
            try connection.run(
                "INSERT INTO snapshots (table_name, version, body) VALUES (?1, 0, ?2)", [.text(name), .text(snapshot)])
        }
    }

    /// Drops table `name` with its log and snapshots. Refs stay, so a client retrying an intent it sent before the
    /// drop still gets the original ack. Throws `.noSuchTable` when it does not exist.
    public func dropTable(_ name: String) throws {
        try transaction("dropping table \(name) in \(path)") {
            try connection.run("DELETE FROM tables WHERE name = ?1", [.text(name)])
            guard connection.changes > 0 else { throw StoreError(.noSuchTable, "no table \(name) in \(path)") }
            try connection.run("DELETE FROM log WHERE table_name = ?1", [.text(name)])
            try connection.run("DELETE FROM snapshots WHERE table_name = ?1", [.text(name)])
        }
    }

    /// Replaces the rules of table `name` outside any version (use `CommitRecord.rules` to change them with one).
    public func updateRules(of name: String, _ change: (String) throws -> String) throws -> String {
        try transaction("setting the rules of table \(name) in \(path)") {
            guard
                let stored = try connection.firstRow(
                    "SELECT rules FROM tables WHERE name = ?1", [.text(name)], { $0.text(at: 0) })
            else { throw StoreError(.noSuchTable, "no table \(name) in \(path)") }
            let rules = try change(stored)
            try connection.run("UPDATE tables SET rules = ?2 WHERE name = ?1", [.text(name), .text(rules)])
            return rules
        }
    }

    /// Every table, ordered by name.
    public func listTables() throws -> [TableInfo] {
        try perform("listing the tables of \(path)") {
            try connection.rows(
                "SELECT name, epoch, rules, created, version FROM tables ORDER BY name", [], Self.tableInfo)
        }
    }

    /// Table `name`'s metadata, or nil when it does not exist.
    public func table(_ name: String) throws -> TableInfo? {
        try perform("reading table \(name) in \(path)") { try info(of: name) }
    }

    func info(of name: String) throws -> TableInfo? {
        try connection.firstRow(
            "SELECT name, epoch, rules, created, version FROM tables WHERE name = ?1", [.text(name)], Self.tableInfo)
    }

    private static func tableInfo(_ row: SQLiteStatement) -> TableInfo {
        TableInfo(
            name: row.text(at: 0), epoch: row.int64(at: 1), rules: row.text(at: 2), created: row.int64(at: 3),
            version: row.int64(at: 4))
    }
}
