/// How a subscribe or refresh brings a client from the version it has to the table's: the updates it missed when
/// there are few enough, otherwise a snapshot. A resume after a long absence would otherwise be sent more than a
/// connection may queue, and be closed as a slow reader at every attempt.
enum CatchUpPlan: Equatable {
    /// The client has the current version: nothing to send.
    case upToDate
    /// Send the updates after this version, if they are all still kept and fit ``ServerContext/CatchUpLimit/bytes``
    /// (see ``fits(_:)``); otherwise a snapshot.
    case updates(after: UInt64)
    /// Send the snapshot of the current version (the shared one, followed by the updates after it).
    case snapshot

    /// The plan for a client at `since` in `epoch` (nil: it has nothing) on a table at `current` in `tableEpoch`.
    init(since: UInt64?, epoch: String?, current: UInt64, tableEpoch: String, limit: ServerContext.CatchUpLimit) {
        guard let since, epoch == tableEpoch, since <= current else {
            self = .snapshot
            return
        }
        if since == current {
            self = .upToDate
        } else if current - since <= UInt64(limit.messages) {
            self = .updates(after: since)
        } else {
            self = .snapshot
        }
    }

    /// Whether updates of `sizes` bytes fit the catch-up bound.
    static func fits(_ sizes: [Int], _ limit: ServerContext.CatchUpLimit) -> Bool {
        sizes.reduce(0, +) <= limit.bytes
    }
}
