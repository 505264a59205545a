/// One committed batch to write: the log entry, its idempotency ack, and optionally a snapshot and new rules.
///
/// Every text is JSON encoded by the server; the store keeps it as opaque UTF-8.
public struct CommitRecord: Sendable, Equatable {
    /// The table the batch applies to.
    public var table: String
    /// The life of the table the batch applies to (its epoch), stored with the ref: a retry after the table was
    /// dropped and created again is then told from a retry.
    public var epoch: Int64
    /// The version the batch produces: must be the table's current version + 1 (counting earlier records of the
    /// same group).
    public var version: Int64
    /// The batch update, as fanned out to subscribers.
    public var batch: String
    /// The client whose intent produced the batch.
    public var originClient: String
    /// The display name that client gave in its hello (its id when it gave none; empty when unknown).
    public var originName: String
    /// The verified user behind that client (their token's `sub` or tokens-file `user`); empty when none.
    public var originUser: String
    /// The client's `ref`, when it sent one: (principal, originClient, originRef) is then stored with `ack` and
    /// `intent` for idempotency.
    public var originRef: String?
    /// Whose client ids `originClient` is one of, for refs: clients choose their ids, so refs are kept per
    /// principal (the server's hash of the client's token; empty when everyone is one principal).
    public var principal: String
    /// What the ref was used for (the server's fingerprint of the intent), so that a reuse of the ref for another
    /// intent is told from a retry.
    public var intent: String
    /// Commit time, milliseconds since the Unix epoch.
    public var time: Int64
    /// The acknowledgement to replay to a retried intent; stored only when `originRef` is present.
    public var ack: String
    /// The table's snapshot at `version`, when the server takes one (every `snapshotInterval` versions).
    public var snapshot: String?
    /// New rules that take effect with this version.
    public var rules: String?

    public init(
        table: String, version: Int64, batch: String, originClient: String, originRef: String? = nil, time: Int64,
        ack: String = "", snapshot: String? = nil, rules: String? = nil, principal: String = "", intent: String = "",
        originName: String = "", epoch: Int64 = 0, originUser: String = ""
    ) {
        self.epoch = epoch
        self.originName = originName
        self.originUser = originUser
        self.principal = principal
        self.intent = intent
        self.table = table
        self.version = version
        self.batch = batch
        self.originClient = originClient
        self.originRef = originRef
        self.time = time
        self.ack = ack
        self.snapshot = snapshot
        self.rules = rules
    }
}

/// A table's metadata row.
public struct TableInfo: Sendable, Equatable {
    public var name: String
    /// Distinguishes incarnations of the same name across drop and re-create; chosen by the server.
    public var epoch: Int64
    /// The table's rules, JSON.
    public var rules: String
    /// Creation time, milliseconds since the Unix epoch.
    public var created: Int64
    /// The latest committed version (0 right after creation).
    public var version: Int64
}

/// A table's state at some version, JSON.
public struct Snapshot: Sendable, Equatable {
    public var version: Int64
    public var body: String
}

/// One committed batch as stored in the log.
public struct LogEntry: Sendable, Equatable {
    public var table: String
    public var version: Int64
    public var batch: String
    public var originClient: String
    public var originRef: String?
    /// Milliseconds since the Unix epoch.
    public var time: Int64
    /// The origin client's display name; empty for entries stored before schema version 3.
    public var originName: String = ""
    /// The origin's verified user; empty when it had none, and for entries stored before schema version 5.
    public var originUser: String = ""
}

/// What a table actor needs at start-up: its metadata, the latest snapshot, and the log after it in version order.
/// Replaying `log` onto `snapshot` yields the table at `info.version`.
public struct LoadedTable: Sendable, Equatable {
    public var info: TableInfo
    public var snapshot: Snapshot
    public var log: [LogEntry]
}

/// The stored outcome of an intent, found again by (principal, client, ref) when the client retries it.
public struct StoredAck: Sendable, Equatable {
    public var table: String
    /// The life of the table the intent was committed to; 0 for refs stored before schema version 4 (SQLite; 3 in
    /// PostgreSQL).
    public var epoch: Int64 = 0
    public var version: Int64
    /// The ack JSON the server sent the first time.
    public var ack: String
    /// The fingerprint of the intent the ref was used for; empty for refs stored before schema version 2.
    public var intent: String = ""
}

/// What a stored ref was used for: its table and the fingerprint of its intent.
public struct StoredRef: Sendable, Hashable {
    public var table: String
    /// The life of the table (its epoch); 0 for refs stored before schema version 4 (SQLite; 3 in PostgreSQL).
    public var epoch: Int64
    /// Empty for refs stored before schema version 2.
    public var intent: String

    public init(table: String, epoch: Int64 = 0, intent: String) {
        self.table = table
        self.epoch = epoch
        self.intent = intent
    }
}
