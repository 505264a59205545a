import TableModel
import TableStore
import TablecastProtocol
import WebSocketTransport

/// Log entries another node committed, checked and decoded for a table actor that follows them: each entry's
/// batch, to apply to the engine, and its `update` message, to fan out.
struct FollowedBatches {
    struct Entry {
        var version: UInt64
        var batch: Batch
        var update: WebSocketMessage
        /// When it was committed, milliseconds since the Unix epoch, and the display name and verified user of its
        /// origin, for history.
        var time: Int64
        var originName: String
        var originUser: String
    }

    let entries: [Entry]

    /// Decodes `log`, which must continue `version` without a gap (a pruned log would leave one); nil otherwise,
    /// and the table must then be reloaded from its snapshot.
    init?(_ log: [LogEntry], after version: UInt64, table: String) {
        var entries: [Entry] = []
        var next = version + 1
        for entry in log {
            guard entry.version == Int64(next), let batch = try? Batch(json: JSONValue(parsing: entry.batch)) else {
                return nil
            }
            let update = ServerMessage.Update(
                table: table, version: next, originClient: entry.originClient, originRef: entry.originRef, batch: batch)
            entries.append(
                Entry(
                    version: next, batch: batch,
                    update: WebSocketMessage(kind: .text, bytes: update.encoded(batchJSON: Array(entry.batch.utf8))),
                    time: entry.time, originName: entry.originName, originUser: entry.originUser))
            next += 1
        }
        self.entries = entries
    }

    /// Applies every entry's batch to `engine`, which must be at the version they follow; on a batch that does not
    /// apply, `engine` holds the ones before it.
    func apply(to engine: inout TableEngine) throws(TableError) {
        for entry in entries { try engine.apply(entry.batch) }
    }
}
