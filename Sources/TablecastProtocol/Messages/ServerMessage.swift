import TableModel

/// A message from the server. Encoded once into bytes (``encoded``), however many clients receive it.
public enum ServerMessage: Hashable, Sendable {
    case welcome(Welcome)
    case ack(Ack)
    case error(ProtocolError)
    /// The whole table; replaces a replica.
    case snapshot(table: String, version: UInt64, epoch: String, rules: TableRules, sections: [Section])
    /// One committed change with UIKit batch-update semantics.
    case update(Update)
    /// The catch-up of a subscribe (or refresh) is complete.
    case subscribed(ref: String?, status: TableStatus)
    case refreshed(ref: String?, status: TableStatus)
    /// A subscription ended: asked for with `unsubscribe`, or ended by the server, which says why in `reason` (the
    /// connection's token no longer lets it read the table).
    case unsubscribed(ref: String?, table: String, reason: String? = nil)
    /// Answers `refreshToken`: the new token is the connection's, until `expires` (its `exp`, seconds since the
    /// Unix epoch; nil for a token that does not expire). Sent as an `ack` without a table.
    case tokenRefreshed(ref: String?, expires: Double?)
    case tables(ref: String?, [TableSummary])
    /// What changed in a table's presence since the previous `presence` (or the state in `subscribed`/`refreshed`).
    case presence(PresenceDelta)
    /// The table was dropped; subscriptions to it ended.
    case dropped(table: String)
    /// The table's rules changed.
    case rules(table: String, rules: TableRules)
    /// The table as it was at a past version (answers `snapshotAt`): a `snapshot` flagged `historical`, which
    /// leaves replicas alone. `rules` are the table's current ones: rules are not versioned.
    case historicalSnapshot(
        ref: String?, table: String, version: UInt64, epoch: String, rules: TableRules, sections: [Section])
    /// A page of a table's history (answers `history`).
    case changes(Changes)

    /// Answers `hello`.
    public struct Welcome: Hashable, Sendable {
        public var ref: String?
        public var client: String
        public var serverName: String
        public var serverVersion: String
        public var maxMessageBytes: Int
        public var maxBatchEntries: Int
        public var intentsPerSecond: Int

        public init(
            ref: String?, client: String, serverName: String, serverVersion: String, maxMessageBytes: Int,
            maxBatchEntries: Int, intentsPerSecond: Int
        ) {
            self.ref = ref
            self.client = client
            self.serverName = serverName
            self.serverVersion = serverVersion
            self.maxMessageBytes = maxMessageBytes
            self.maxBatchEntries = maxBatchEntries
            self.intentsPerSecond = intentsPerSecond
        }
    }

    /// A request was committed (or changed nothing).
    public struct Ack: Hashable, Sendable {
        public var ref: String?
        public var table: String
        public var version: UInt64
        /// The life of the table the request was committed to (see the `epoch` of `subscribe`): a client tells an
        /// ack of an older life of the table's name apart. Absent only in acks of servers that predate it.
        public var epoch: String?
        /// Ids of new sections and rows, in the order of the intent's inserts.
        public var created: [String]
        /// Where each insert and move went after rebase and retargeting: section indexes for section entries,
        /// index paths for rows; inserts first, then moves.
        public var resolved: [JSONValue]
        public var noop: Bool

        public init(
            ref: String?, table: String, version: UInt64, epoch: String? = nil, created: [String] = [],
            resolved: [JSONValue] = [], noop: Bool = false
        ) {
            self.ref = ref
            self.table = table
            self.version = version
            self.epoch = epoch
            self.created = created
            self.resolved = resolved
            self.noop = noop
        }

        /// The ack of a resolved intent: ids it created and where its inserts and moves went.
        public init(ref: String?, table: String, epoch: String?, resolution: Resolution) {
            let sections = (resolution.insertedSections + resolution.movedSections).map { JSONValue.number(Double($0)) }
            let rows = (resolution.insertedRows + resolution.movedRows).map(\.json)
            self.init(
                ref: ref, table: table, version: resolution.version, epoch: epoch, created: resolution.createdIDs,
                resolved: sections + rows, noop: resolution.isNoop)
        }
    }

    /// One committed change.
    public struct Update: Hashable, Sendable {
        public var table: String
        public var version: UInt64
        public var originClient: String
        public var originRef: String?
        public var batch: Batch

        public init(table: String, version: UInt64, originClient: String, originRef: String?, batch: Batch) {
            self.table = table
            self.version = version
            self.originClient = originClient
            self.originRef = originRef
            self.batch = batch
        }
    }

    /// Where a table stands: sent when a catch-up completes.
    public struct TableStatus: Hashable, Sendable {
        public var table: String
        public var version: UInt64
        public var epoch: String
        public var rules: TableRules
        /// Who is on the table, as of the catch-up; the `presence` deltas that follow apply to it. Servers always
        /// send it; nil only when decoding a message without it.
        public var presence: PresenceState?

        public init(table: String, version: UInt64, epoch: String, rules: TableRules, presence: PresenceState? = nil) {
            self.table = table
            self.version = version
            self.epoch = epoch
            self.rules = rules
            self.presence = presence
        }
    }

    /// One line of `tables`.
    public struct TableSummary: Hashable, Sendable {
        public var table: String
        public var version: UInt64
        public var epoch: String
        public var subscribers: Int

        public init(table: String, version: UInt64, epoch: String, subscribers: Int) {
            self.table = table
            self.version = version
            self.epoch = epoch
            self.subscribers = subscribers
        }
    }
}

extension ServerMessage {
    /// A page of a table's history.
    public struct Changes: Hashable, Sendable {
        public var ref: String?
        public var table: String
        public var epoch: String
        /// The table's latest version.
        public var version: UInt64
        /// The oldest kept version: the table at it can be read, and every change after it.
        public var oldest: UInt64
        /// The changes, in the order asked for.
        public var entries: [HistoryEntry]
        /// Where the next page starts when the range asked for has more: ask again with `to: next` (newest
        /// first) or `from: next` (oldest first).
        public var next: UInt64?

        public init(
            ref: String?, table: String, epoch: String, version: UInt64, oldest: UInt64, entries: [HistoryEntry],
            next: UInt64?
        ) {
            self.ref = ref
            self.table = table
            self.epoch = epoch
            self.version = version
            self.oldest = oldest
            self.entries = entries
            self.next = next
        }
    }

    /// One committed change as the history keeps it: who made it and when.
    public struct HistoryEntry: Hashable, Sendable {
        /// The version the change produced.
        public var version: UInt64
        /// Commit time, milliseconds since the Unix epoch.
        public var time: Int64
        public var originClient: String
        /// The client's display name; nil for changes stored before names were kept.
        public var originName: String?
        public var originRef: String?
        /// The change, as its `update` carried it.
        public var batch: Batch
        /// The verified user who made it (their token's `sub` or tokens-file `user`); nil when the token named none.
        public var originUser: String?

        public init(
            version: UInt64, time: Int64, originClient: String, originName: String?, originRef: String?, batch: Batch,
            originUser: String? = nil
        ) {
            self.version = version
            self.time = time
            self.originClient = originClient
            self.originName = originName
            self.originRef = originRef
            self.batch = batch
            self.originUser = originUser
        }
    }
}
