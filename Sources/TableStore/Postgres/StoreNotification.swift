/// What a ``PostgresTableStore`` announces on the ``channel`` when its transaction commits, so that the other
/// nodes on the database follow. Payloads carry positions, never contents (NOTIFY payloads are limited to 8,000
/// bytes): a follower reads what changed from the tables.
public enum StoreNotification: Sendable, Equatable {
    /// Table `table` reached `version`.
    case committed(table: String, version: Int64)
    case created(table: String)
    case dropped(table: String)
    /// The table's rules were replaced outside any version.
    case rulesChanged(table: String)
    /// Some node's presence on the table changed (see ``PostgresPresence``).
    case presenceChanged(table: String)

    /// The one channel every node listens on.
    public static let channel = "tablecast"

    /// `kind:version:table` (the table name last, as it may contain colons).
    public var payload: String {
        switch self {
        case .committed(let table, let version): "v:\(version):\(table)"
        case .created(let table): "c:0:\(table)"
        case .dropped(let table): "d:0:\(table)"
        case .rulesChanged(let table): "r:0:\(table)"
        case .presenceChanged(let table): "p:0:\(table)"
        }
    }

    /// Reads a payload made by ``payload``; nil for anything else.
    public init?(payload: String) {
        let parts = payload.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, let version = Int64(parts[1]) else { return nil }
        let table = String(parts[2])
        switch parts[0] {
        case "v": self = .committed(table: table, version: version)
        case "c": self = .created(table: table)
        case "d": self = .dropped(table: table)
        case "r": self = .rulesChanged(table: table)
        case "p": self = .presenceChanged(table: table)
        default: return nil
        }
    }
}
