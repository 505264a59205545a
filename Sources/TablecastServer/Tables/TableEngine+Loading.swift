import TableModel
import TableStore

extension TableEngine {
    /// Rebuilds table `name` from what `store` keeps: its latest snapshot, its rules, and the log after the
    /// snapshot, read and applied a page at a time, so that a log of big batches is never all in memory at once.
    /// The history keeps what `historyLimit` and `historyByteLimit` allow, as it does while serving.
    init(loading name: String, from store: any TableStorage, historyLimit: Int, historyByteLimit: Int) throws {
        let page = 64
        let loaded = try store.load(name, logLimit: page)
        var snapshot = try Table(json: JSONValue(parsing: loaded.snapshot.body))
        snapshot.rules = try TableRules(json: JSONValue(parsing: loaded.info.rules))
        self.init(table: snapshot, historyLimit: historyLimit, historyByteLimit: historyByteLimit)
        var entries = loaded.log
        while true {
            for entry in entries { try apply(Batch(json: JSONValue(parsing: entry.batch))) }
            let version = Int64(table.version)
            guard version < loaded.info.version else { return }
            entries = try store.logEntries(name, after: version, limit: min(page, Int(loaded.info.version - version)))
            guard entries.first?.version == version + 1 else {
                throw StoreError(
                    .corrupt, "table \(name)'s log stops at version \(version), before \(loaded.info.version)")
            }
        }
    }
}

/// Epochs are stored as integers and shown to clients as opaque hex strings.
enum Epoch {
    static func text(_ epoch: Int64) -> String { String(UInt64(bitPattern: epoch), radix: 16) }

    /// A fresh epoch for a new life of a table.
    static func random() -> Int64 { Int64.random(in: 1...Int64.max) }
}
