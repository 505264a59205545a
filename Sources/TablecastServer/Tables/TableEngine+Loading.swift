import TableModel
import TableStore

extension TableEngine {
    /// Rebuilds a table from what the store keeps: its latest snapshot, its rules, and the log after the snapshot.
    init(loaded: LoadedTable, historyLimit: Int) throws {
        var snapshot = try Table(json: JSONValue(parsing: loaded.snapshot.body))
        snapshot.rules = try TableRules(json: JSONValue(parsing: loaded.info.rules))
        let batches = try loaded.log.map { try Batch(json: JSONValue(parsing: $0.batch)) }
        try self.init(snapshot: snapshot, replaying: batches, historyLimit: historyLimit)
    }
}

/// Epochs are stored as integers and shown to clients as opaque hex strings.
enum Epoch {
    static func text(_ epoch: Int64) -> String { String(UInt64(bitPattern: epoch), radix: 16) }

    /// A fresh epoch for a new life of a table.
    static func random() -> Int64 { Int64.random(in: 1...Int64.max) }
}
