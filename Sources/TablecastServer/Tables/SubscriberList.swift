import WebSocketTransport

/// A table's subscribed connections, as one array the transport fans out to; adding and removing one costs the
/// same however many there are (a removal moves the last one into the gap: the order of fan-out does not matter).
struct SubscriberList {
    private(set) var ids: [WebSocketConnectionID] = []
    private var positions: [WebSocketConnectionID: Int] = [:]

    var count: Int { ids.count }
    var isEmpty: Bool { ids.isEmpty }

    /// Adds `id`; false when it was already there.
    mutating func insert(_ id: WebSocketConnectionID) -> Bool {
        guard positions[id] == nil else { return false }
        positions[id] = ids.count
        ids.append(id)
        return true
    }

    /// Removes `id`; false when it was not there.
    mutating func remove(_ id: WebSocketConnectionID) -> Bool {
        guard let position = positions.removeValue(forKey: id) else { return false }
        let last = ids.removeLast()
        if position < ids.count {
            ids[position] = last
            positions[last] = position
        }
        return true
    }

    mutating func removeAll() {
        ids.removeAll()
        positions.removeAll()
    }
}
