/// How a table keeps in step with its store, chosen when the table is made: the table's actor asks it rather than
/// testing which store it has.
enum TableReplication: Sendable {
    /// The table is the only writer of its store (a SQLite file): nothing to follow, and a group never loses its
    /// versions to another writer.
    case local
    /// Several nodes write the store (PostgreSQL): the table follows their commits, resolves again a group another
    /// node beat to its versions, and resends a snapshot when a reload brought their commits.
    case shared(TableFollower)

    /// Whether commit groups record what they took and the engine before them, to be resolved again.
    var recordsGroups: Bool {
        if case .shared = self { true } else { false }
    }

    /// Whether a reload may bring commits subscribers never got, so that they are sent the reloaded table.
    var reloadMayBringNews: Bool { recordsGroups }

    /// What the store has after `version` that this table has not applied: the other nodes' commits.
    func read(after version: UInt64, table: String) async -> TableFollower.Outcome {
        switch self {
        case .local:
            // This table wrote everything there is.
            .followed(FollowedBatches([], after: version, table: table)!)
        case .shared(let follower):
            await follower.read(after: version)
        }
    }
}

/// The versions a table knows the store to have beyond its engine, from its own commits and other nodes'
/// notifications: when a notification needs a read of the log, and when an intent should follow first.
struct StoreWatermarks: Sendable {
    /// The latest version known to be in the store. Set as soon as the committer reports a commit, which may be
    /// before the notification of it arrives: a notification up to it needs no read.
    private(set) var stored: UInt64
    /// The latest version other nodes' notifications reported. A table with no subscribers here does not read
    /// their commits as they come: it follows up to this version once work arrives.
    private(set) var known: UInt64

    init(at version: UInt64) {
        stored = version
        known = version
    }

    /// Another node committed up to `version` (nil: unknown, e.g. after a lost notification channel): whether the
    /// table reads the log now. Only a table someone here `watches` does; the others follow once work arrives.
    mutating func notified(upTo version: UInt64?, watched: Bool) -> Bool {
        guard let version else { return true }
        known = max(known, version)
        return version > stored && watched
    }

    /// The store holds the table up to `version` (a commit of its own, a read of the log, or a reload).
    mutating func stored(upTo version: UInt64) {
        stored = version
    }

    /// Whether the store is known to have versions after `version`, the engine's: an intent resolved on top of
    /// them spares a conflict.
    func isAhead(of version: UInt64) -> Bool { known > version }

    /// The version `tables` lists for a table whose committed version is `version`.
    func listed(_ version: UInt64) -> UInt64 { max(version, known) }
}
