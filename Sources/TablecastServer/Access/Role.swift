/// What a client may do on a table. Roles are ordered: each includes everything the ones before it allow.
public enum Role: String, Sendable, Hashable, CaseIterable, Comparable {
    /// subscribe, refresh, unsubscribe, listTables.
    case read
    /// Also every edit intent and presence message.
    case write
    /// Also createTable, dropTable, setRules and row flags.
    case admin

    public static func < (lhs: Role, rhs: Role) -> Bool {
        lhs.rank < rhs.rank
    }

    private var rank: Int {
        switch self {
        case .read: 0
        case .write: 1
        case .admin: 2
        }
    }
}
