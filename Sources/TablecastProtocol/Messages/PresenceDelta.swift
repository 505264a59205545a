/// What changed in a table's presence since the previous `presence` message: its size depends on what changed,
/// never on how many are on the table.
public struct PresenceDelta: Hashable, Sendable {
    public var table: String
    /// Connections listed since, in the order they were listed.
    public var joined: [PresenceEntry]
    /// Listed connections whose editing mode or row changed: their whole new entry.
    public var changed: [PresenceEntry]
    /// Keys of connections no longer listed (they unsubscribed or closed).
    public var left: [String]
    /// The number of unlisted subscribers now.
    public var viewers: Int

    public init(
        table: String, joined: [PresenceEntry] = [], changed: [PresenceEntry] = [], left: [String] = [], viewers: Int
    ) {
        self.table = table
        self.joined = joined
        self.changed = changed
        self.left = left
        self.viewers = viewers
    }

    /// Applies the delta: joined entries are appended (or replace one with the same key), changed ones replace
    /// theirs (or are appended), left ones are removed. Tolerant, so that a state and a delta that overlap still
    /// end in the server's state.
    public func apply(to state: inout PresenceState) {
        let gone = Set(left)
        var clients = gone.isEmpty ? state.clients : state.clients.filter { !gone.contains($0.key) }
        var index: [String: Int] = [:]
        for (position, entry) in clients.enumerated() { index[entry.key] = position }
        for entry in joined + changed {
            if let position = index[entry.key] {
                clients[position] = entry
            } else {
                index[entry.key] = clients.count
                clients.append(entry)
            }
        }
        state.clients = clients
        state.viewers = viewers
    }
}
