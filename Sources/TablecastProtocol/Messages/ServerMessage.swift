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
    case unsubscribed(ref: String?, table: String)
    case tables(ref: String?, [TableSummary])
    /// What changed in a table's presence since the previous `presence` (or the state in `subscribed`/`refreshed`).
    case presence(PresenceDelta)
    /// The table was dropped; subscriptions to it ended.
    case dropped(table: String)
    /// The table's rules changed.
    case rules(table: String, rules: TableRules)

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
        /// Sent for createTable, so a client can resume the new table.
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
        public init(ref: String?, table: String, resolution: Resolution) {
            let sections = (resolution.insertedSections + resolution.movedSections).map { JSONValue.number(Double($0)) }
            let rows = (resolution.insertedRows + resolution.movedRows).map(\.json)
            self.init(
                ref: ref, table: table, version: resolution.version, created: resolution.createdIDs,
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
