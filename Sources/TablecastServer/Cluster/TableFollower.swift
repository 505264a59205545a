import TableModel
import TableStore

/// Reads what the other nodes committed to one table of a shared store: the log after a version, through the
/// committer, checked and decoded for the table's actor to apply and fan out.
struct TableFollower: Sendable {
    enum Outcome {
        /// The entries after the version asked for, in order (none when nothing is new).
        case followed(FollowedBatches)
        /// The log no longer reaches back to the version (pruned), or an entry does not decode: the table must
        /// be reloaded from its snapshot.
        case gap
        /// The store could not be read.
        case failed(any Error)
    }

    let table: String
    let committer: Committer
    let metrics: ServerMetrics

    /// The log of the table after `version`.
    func read(after version: UInt64) async -> Outcome {
        let table = table
        metrics.logReads.increment()
        do {
            let log = try await committer.perform { try $0.logEntries(table, after: Int64(version)) }
            return FollowedBatches(log, after: version, table: table).map(Outcome.followed) ?? .gap
        } catch {
            return .failed(error)
        }
    }
}
