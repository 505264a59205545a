import TablecastProtocol

/// Who is on one table and what each of them is doing: the state behind `presence` messages.
///
/// Keyed by connection, because one client id may be connected twice (two tabs); listed in the order people
/// arrived so that every subscriber sees the same list. Each mutation reports whether anything visible changed,
/// so the table sends `presence` only when there is news.
public struct PresenceBoard<Connection: Hashable & Sendable>: Sendable {
    private var order: [Connection] = []
    private var entries: [Connection: PresenceEntry] = [:]

    public init() {}

    /// Everyone on the table, in arrival order.
    public var clients: [PresenceEntry] { order.compactMap { entries[$0] } }

    /// Whether anyone is here.
    public var isEmpty: Bool { order.isEmpty }

    /// `connection` arrived (subscribed). Returns false when it was already here.
    public mutating func join(_ connection: Connection, client: String, name: String) -> Bool {
        guard entries[connection] == nil else { return false }
        order.append(connection)
        entries[connection] = PresenceEntry(client: client, name: name, editing: false, row: nil)
        return true
    }

    /// `connection` left (unsubscribed or closed): its editing state goes with it.
    public mutating func leave(_ connection: Connection) -> Bool {
        guard entries.removeValue(forKey: connection) != nil else { return false }
        order.removeAll { $0 == connection }
        return true
    }

    /// Whether `connection` is on the table.
    public func contains(_ connection: Connection) -> Bool { entries[connection] != nil }

    /// Editing mode on or off.
    public mutating func setEditing(_ connection: Connection, _ on: Bool) -> Bool {
        update(connection) { $0.editing = on }
    }

    /// A swipe or edit began on `row`; a person edits one row at a time, so it replaces any earlier one.
    public mutating func beginEditingRow(_ connection: Connection, row: String) -> Bool {
        update(connection) { $0.row = row }
    }

    /// The swipe or edit on `row` ended. Ending a row that is not the one being edited changes nothing.
    public mutating func endEditingRow(_ connection: Connection, row: String) -> Bool {
        update(connection) { if $0.row == row { $0.row = nil } }
    }

    private mutating func update(_ connection: Connection, _ change: (inout PresenceEntry) -> Void) -> Bool {
        guard var entry = entries[connection] else { return false }
        let before = entry
        change(&entry)
        entries[connection] = entry
        return entry != before
    }
}
