import TablecastProtocol

/// The other nodes' presence on one table as this node's board shows it: their listed entries as members of
/// their own (by shared key) and their viewers counted with this node's. Subscribers hear of a change with the
/// board's next delta.
struct OtherNodesPresence {
    /// What the board shows now.
    private(set) var shown = ClusterPresence.Share()

    /// Brings `board` from what it showed to `others`; `member` makes a board member of a shared key.
    mutating func show<Member>(
        _ others: ClusterPresence.Share, on board: inout PresenceBoard<Member>, as member: (String) -> Member
    ) {
        guard others != shown else { return }
        board.setViewersElsewhere(others.viewers)
        let before = Dictionary(shown.clients.map { ($0.key, $0) }, uniquingKeysWith: { first, _ in first })
        let keys = Set(others.clients.map(\.key))
        for entry in shown.clients where !keys.contains(entry.key) { board.leave(member(entry.key)) }
        for entry in others.clients {
            let key = member(entry.key)
            board.join(key, key: entry.key, client: entry.client, name: entry.name, user: entry.user)
            board.setEditing(key, entry.editing)
            if let row = entry.row {
                board.beginEditingRow(key, row: row)
            } else if let row = before[entry.key]?.row {
                board.endEditingRow(key, row: row)
            }
        }
        shown = others
    }
}
