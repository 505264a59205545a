import TablecastProtocol

/// Who is on one table and what each of them is doing: the state behind `presence` deltas.
///
/// Keyed by connection, because one client id may be connected twice (two tabs). A connection is *listed* (an
/// entry with its presence key) when it said `hello` with a name or once it sends presence; the others only count
/// as `viewers`. The board keeps two states: the current one, which every mutation changes, and the published
/// one, which every subscriber has (sent whole in each catch-up). ``takeDelta()`` turns the connections changed
/// since the last delta into one `presence` message and publishes it, so the work and the bytes of a change do not
/// depend on how many are on the table.
public struct PresenceBoard<Connection: Hashable & Sendable>: Sendable {
    private struct Member: Sendable {
        var entry: PresenceEntry
        /// Listed (a name, or presence sent) rather than counted.
        var listed: Bool
        /// When it was listed, for the order of the published list: later deltas list later arrivals.
        var arrival: UInt64
    }

    private struct Published: Sendable {
        var entry: PresenceEntry
        var arrival: UInt64
    }

    private var members: [Connection: Member] = [:]
    /// The connections here that only count.
    private var ownViewers = 0
    /// Viewers counted somewhere else (the other nodes of a shared store).
    private var viewersElsewhere = 0
    /// Everyone who only counts, here and elsewhere.
    private var viewers: Int { ownViewers + viewersElsewhere }
    /// Connections editing each row, so that a deleted row's editors are found without a scan.
    private var editors: [String: Set<Connection>] = [:]
    private var nextArrival: UInt64 = 0

    private var published: [Connection: Published] = [:]
    private var publishedViewers = 0
    /// `ownViewers` at the last delta: a change is news to share with other nodes even when the total stays.
    private var publishedOwnViewers = 0
    /// Connections whose listing may differ from the published one.
    private var dirty: Set<Connection> = []
    /// ``PresenceState/sharedJSON(clients:viewers:)`` of the published state, written once per delta.
    private var publishedJSON: [UInt8]?

    public init() {}

    /// Whether something changed since the last delta (it may still cancel out, e.g. a join and a leave).
    public var hasNews: Bool { !dirty.isEmpty || viewers != publishedViewers || ownViewers != publishedOwnViewers }

    /// Whether `connection` is on the table.
    public func contains(_ connection: Connection) -> Bool { members[connection] != nil }

    /// Whether anyone is editing a row.
    public var anyRowEdited: Bool { !editors.isEmpty }

    /// Whether someone is editing `row`.
    public func isEdited(_ row: String) -> Bool { editors[row] != nil }

    /// The published state (what a subscriber has after the last delta), everyone listed in arrival order.
    public var publishedClients: [PresenceEntry] {
        published.values.sorted { $0.arrival < $1.arrival }.map(\.entry)
    }

    /// The current state's listed entries whose connection passes `include`, in arrival order (e.g. a node's own,
    /// to share with other nodes).
    public func listed(where include: (Connection) -> Bool) -> [PresenceEntry] {
        members.filter { $0.value.listed && include($0.key) }.values.sorted { $0.arrival < $1.arrival }.map(\.entry)
    }

    /// The published number of viewers.
    public var publishedViewerCount: Int { publishedViewers }

    /// The number of this board's own connections that only count (viewers elsewhere not included).
    public var ownViewerCount: Int { ownViewers }

    /// Sets the number of viewers counted elsewhere, which `viewers` includes from the next delta on.
    public mutating func setViewersElsewhere(_ count: Int) {
        viewersElsewhere = count
    }

    /// The published state's shared text, written once until the next delta.
    public mutating func publishedStateJSON() -> [UInt8] {
        if let publishedJSON { return publishedJSON }
        let json = PresenceState.sharedJSON(clients: publishedClients, viewers: publishedViewers)
        publishedJSON = json
        return json
    }

    /// `connection` arrived (subscribed) under presence key `key`, as the verified `user` if its token names one;
    /// `name` nil makes it a viewer until it sends presence. Returns false when it was already here.
    @discardableResult
    public mutating func join(
        _ connection: Connection, key: String, client: String, name: String?, user: String? = nil
    ) -> Bool {
        guard members[connection] == nil else { return false }
        let listed = name != nil
        members[connection] = Member(
            entry: PresenceEntry(key: key, client: client, name: name ?? client, editing: false, row: nil, user: user),
            listed: listed,
            arrival: nextArrival)
        if listed {
            nextArrival += 1
            dirty.insert(connection)
        } else {
            ownViewers += 1
        }
        return true
    }

    /// `connection` left (unsubscribed or closed): its editing state goes with it.
    @discardableResult
    public mutating func leave(_ connection: Connection) -> Bool {
        guard let member = members.removeValue(forKey: connection) else { return false }
        if let row = member.entry.row { removeEditor(connection, of: row) }
        if member.listed { dirty.insert(connection) } else { ownViewers -= 1 }
        return true
    }

    /// `connection` shows another `name` or `user` from now on (its token was replaced). A name lists a viewer; a
    /// listed connection that loses its name keeps showing its client id, as one that only sent presence does.
    @discardableResult
    public mutating func rename(_ connection: Connection, name: String?, user: String?) -> Bool {
        guard let member = members[connection] else { return false }
        guard name != nil || member.listed else {
            members[connection]!.entry.user = user
            return false
        }
        return update(connection) {
            $0.name = name ?? $0.client
            $0.user = user
        }
    }

    /// Editing mode on or off.
    @discardableResult
    public mutating func setEditing(_ connection: Connection, _ on: Bool) -> Bool {
        update(connection) { $0.editing = on }
    }

    /// A swipe or edit began on `row`; a person edits one row at a time, so it replaces any earlier one.
    @discardableResult
    public mutating func beginEditingRow(_ connection: Connection, row: String) -> Bool {
        update(connection) { $0.row = row }
    }

    /// The swipe or edit on `row` ended. Ending a row that is not the one being edited changes nothing.
    @discardableResult
    public mutating func endEditingRow(_ connection: Connection, row: String) -> Bool {
        update(connection) { if $0.row == row { $0.row = nil } }
    }

    /// `row` was deleted: nobody edits it any more.
    @discardableResult
    public mutating func clearRow(_ row: String) -> Bool {
        guard let connections = editors[row] else { return false }
        for connection in connections { update(connection) { $0.row = nil } }
        return true
    }

    /// Presence sent by `connection`: it is listed from now on, and the change is news when it changed anything.
    @discardableResult
    private mutating func update(_ connection: Connection, _ change: (inout PresenceEntry) -> Void) -> Bool {
        guard var member = members[connection] else { return false }
        let before = member.entry
        change(&member.entry)
        if member.entry.row != before.row {
            if let row = before.row { removeEditor(connection, of: row) }
            if let row = member.entry.row { editors[row, default: []].insert(connection) }
        }
        let newlyListed = !member.listed
        if newlyListed {
            member.listed = true
            member.arrival = nextArrival
            nextArrival += 1
            ownViewers -= 1
        }
        members[connection] = member
        guard newlyListed || member.entry != before else { return false }
        dirty.insert(connection)
        return true
    }

    private mutating func removeEditor(_ connection: Connection, of row: String) {
        editors[row]?.remove(connection)
        if editors[row]?.isEmpty == true { editors[row] = nil }
    }

    /// What changed since the last delta, for `table`, now published; nil when nothing visible did. Costs the
    /// number of connections that changed, not the number on the table.
    public mutating func takeDelta(table: String) -> PresenceDelta? {
        var joined: [Published] = []
        var changed: [PresenceEntry] = []
        var left: [String] = []
        for connection in dirty {
            let now = members[connection].flatMap { $0.listed ? Published(entry: $0.entry, arrival: $0.arrival) : nil }
            switch (published[connection], now) {
            case (nil, let now?):
                joined.append(now)
                published[connection] = now
            case (let before?, let now?):
                // Changed in place: subscribers keep it where it was (even if it left and came back meanwhile).
                if before.entry != now.entry { changed.append(now.entry) }
                published[connection] = Published(entry: now.entry, arrival: before.arrival)
            case (let before?, nil):
                left.append(before.entry.key)
                published[connection] = nil
            case (nil, nil):
                break
            }
        }
        dirty.removeAll(keepingCapacity: true)
        publishedOwnViewers = ownViewers
        guard !joined.isEmpty || !changed.isEmpty || !left.isEmpty || viewers != publishedViewers else { return nil }
        publishedViewers = viewers
        publishedJSON = nil
        return PresenceDelta(
            table: table, joined: joined.sorted { $0.arrival < $1.arrival }.map(\.entry),
            changed: changed.sorted { $0.key < $1.key }, left: left.sorted(), viewers: viewers)
    }
}
